package gateway_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// A change that widens what agents may do is not made when its decision cannot be recorded;
// one that narrows it is made all the same, and the caller is told it is unrecorded. A
// recorded change has its decision and its outcome, with the code of its failure.
func TestOperatorLogChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, gateway.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := gateway.OpenOperatorLog(st, dir, nil)
	failed := errors.New("it broke")
	codeOf := func(error) string { return "EXECUTION_FAILED" }
	var warned []error
	warn := func(err error) { warned = append(warned, err) }
	rec := audit.Record{Action: "client.add", Result: "add requested", Explanation: "a test"}
	if err := operator.Change(ctx, l.Recorder(), "cli:test", rec, false, func(*audit.Record) error { return nil }, codeOf, warn); err != nil {
		t.Fatal(err)
	}
	if err := operator.Change(ctx, l.Recorder(), "cli:test", rec, false, func(*audit.Record) error { return failed }, codeOf, warn); !errors.Is(err, failed) {
		t.Fatalf("a failed change: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	es, err := st.AuditRange(ctx, 1, 0, 0)
	if err != nil || len(es) != 4 {
		t.Fatalf("%d records (%v), want 4", len(es), err)
	}
	for i, want := range []string{"decision|add requested|", "outcome|success|", "decision|add requested|", "outcome|error|EXECUTION_FAILED"} {
		d, err := audit.DecodeEntry(es[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Record.Kind + "|" + d.Record.Result + "|" + d.Record.Code; got != want || d.Record.ClientID != "cli:test" {
			t.Errorf("record %d: %s by %s, want %s", i, got, d.Record.ClientID, want)
		}
	}

	// The log closed: nothing can be recorded.
	ran := false
	err = operator.Change(ctx, l.Recorder(), "cli:test", rec, false, func(*audit.Record) error { ran = true; return nil }, codeOf, warn)
	if err == nil || ran {
		t.Errorf("a widening change unrecorded: ran %v, err %v", ran, err)
	}
	ran, warned = false, nil
	err = operator.Change(ctx, l.Recorder(), "cli:test", audit.Record{Action: "token.revoke", TokenID: "tok", Result: "revoke requested"}, true,
		func(*audit.Record) error { ran = true; return nil }, codeOf, warn)
	if err != nil || !ran || len(warned) != 1 {
		t.Errorf("a narrowing change unrecorded: ran %v, err %v, warned %v", ran, err, warned)
	}
}
