package operator_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/toolserver"
)

func open(t *testing.T) (store.Store, *audit.Writer) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := audit.NewWriter(st, nil)
	t.Cleanup(func() { w.Close() })
	return st, w
}

func records(t *testing.T, st store.Store) []audit.Record {
	t.Helper()
	es, err := st.AuditRange(context.Background(), 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]audit.Record, len(es))
	for i, e := range es {
		d, err := audit.DecodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.Record
	}
	return out
}

// summary is a record as the tests compare it.
func summary(r audit.Record) string {
	return strings.Join([]string{r.Action, r.Kind, r.Result, r.Code, r.ClientID, r.TokenID}, "|")
}

// A change is recorded before and after, the outcome with the code of its failure and what
// the change filled in; a widening change is not made unrecorded, a narrowing one is, and
// says so.
func TestChange(t *testing.T) {
	st, w := open(t)
	ctx := context.Background()
	var warned []error
	warn := func(err error) { warned = append(warned, err) }
	rec := audit.Record{Action: "token.revoke", TokenID: "tok_1", Result: "revoke requested"}
	if err := operator.Change(ctx, w, "cl_a", rec, true, func(out *audit.Record) error {
		out.App = "org.example.filled"
		return nil
	}, operator.CodeOf(operator.CodeInvalidToken), warn); err != nil {
		t.Fatal(err)
	}
	failed := fmt.Errorf("wrapped: %w", store.ErrNotFound)
	if err := operator.Change(ctx, w, "cl_a", rec, true, func(*audit.Record) error { return failed },
		operator.CodeOf(operator.CodeInvalidToken), warn); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed change: %v", err)
	}
	got := records(t, st)
	var lines []string
	for _, r := range got {
		lines = append(lines, summary(r))
	}
	want := []string{"token.revoke|decision|revoke requested||cl_a|tok_1", "token.revoke|outcome|success||cl_a|tok_1",
		"token.revoke|decision|revoke requested||cl_a|tok_1", "token.revoke|outcome|error|INVALID_TOKEN|cl_a|tok_1"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[1].App != "org.example.filled" || got[0].App != "" {
		t.Errorf("what the change filled in: decision %q, outcome %q", got[0].App, got[1].App)
	}
	if len(warned) != 0 {
		t.Errorf("warned: %v", warned)
	}

	for _, log := range []operator.Recorder{nil, closed(t, st)} {
		ran := false
		err := operator.Change(ctx, log, "cl_a", rec, false, func(*audit.Record) error { ran = true; return nil },
			operator.CodeOf(operator.CodeInvalidRequest), warn)
		if err == nil || ran {
			t.Errorf("a widening change without its record: ran %v, err %v", ran, err)
		}
		ran, warned = false, nil
		err = operator.Change(ctx, log, "cl_a", rec, true, func(*audit.Record) error { ran = true; return nil },
			operator.CodeOf(operator.CodeInvalidRequest), warn)
		if err != nil || !ran || len(warned) != 1 {
			t.Errorf("a narrowing change without its record: ran %v, err %v, warned %v", ran, err, warned)
		}
	}
}

// closed is a Recorder that can record nothing.
func closed(t *testing.T, st store.Store) operator.Recorder {
	w := audit.NewWriter(st, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

// One table of codes for every front: a refused change is INVALID_REQUEST, what it names
// missing is the code the caller gives, anything else EXECUTION_FAILED, and wrapping changes
// nothing.
func TestCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{store.ErrNotFound, "NF"},
		{store.ErrExists, operator.CodeInvalidRequest},
		{consent.ErrNotPending, operator.CodeInvalidRequest},
		{consent.ErrInvalidRequest, operator.CodeInvalidRequest},
		{plugin.ErrNoPending, operator.CodeInvalidRequest},
		{plugin.ErrPendingChanged, operator.CodeInvalidRequest},
		{plugin.ErrNotInstalled, operator.CodeInvalidRequest},
		{plugin.ErrInstalled, operator.CodeInvalidRequest},
		{toolserver.ErrNothingToAccept, operator.CodeInvalidRequest},
		{toolserver.ErrChangedAgain, operator.CodeInvalidRequest},
		{toolserver.ErrNotToolServer, operator.CodeInvalidRequest},
		{toolserver.ErrTaken, operator.CodeInvalidRequest},
		{errors.New("disk full"), operator.CodeExecutionFailed},
		{context.Canceled, operator.CodeExecutionFailed},
	} {
		for _, err := range []error{c.err, fmt.Errorf("a: %w", c.err), fmt.Errorf("b: %w", fmt.Errorf("a: %w", c.err))} {
			if c.err == nil && err != nil {
				continue
			}
			if got := operator.Code(err, "NF"); got != c.want {
				t.Errorf("Code(%v) = %q, want %q", err, got, c.want)
			}
		}
	}
}

// Disabling, enabling and removing a client are recorded before and after as the actor's,
// naming the client by its id; a client that does not exist is recorded as INVALID_REQUEST
// and changes nothing; removing revokes its tokens. A disable or a removal is made even when
// the log cannot record it; an enable is not.
func TestChangeClient(t *testing.T) {
	st, w := open(t)
	ctx := context.Background()
	now := time.Now()
	for _, c := range []store.Client{{ID: "cl_a", Name: "alice", KeyHash: "sha256:a", Trust: "user"},
		{ID: "cl_b", Name: "cl_a", KeyHash: "sha256:b", Trust: "user"}} {
		if err := st.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutToken(ctx, store.Token{ID: "tok_a", ClientID: "cl_a", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// An id comes before a name: the client named "cl_a" does not hide cl_a.
	for ref, want := range map[string]string{"cl_a": "cl_a", "alice": "cl_a", "cl_b": "cl_b"} {
		if c, err := operator.FindClient(ctx, st, ref); err != nil || c.ID != want {
			t.Errorf("FindClient(%q): %s %v, want %s", ref, c.ID, err, want)
		}
	}
	for _, ref := range []string{"", "nobody", strings.Repeat("x", audit.MaxFieldBytes+1)} {
		if _, err := operator.FindClient(ctx, st, ref); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FindClient(%.20q): %v", ref, err)
		}
	}
	by := operator.Actor{ID: "cli:test", Who: "the operator", Where: "from the command line"}
	warn := func(err error) { t.Errorf("warned: %v", err) }
	disabled := func(id string) bool {
		c, err := st.GetClient(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return c.Disabled
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(operator.ChangeClient(ctx, st, w, by, "cl_a", operator.ClientDisable, now, warn))
	if !disabled("cl_a") || disabled("cl_b") {
		t.Error("disable: wrong client state")
	}
	must(operator.ChangeClient(ctx, st, w, by, "cl_a", operator.ClientEnable, now, warn))
	if disabled("cl_a") {
		t.Error("enable: still disabled")
	}
	if err := operator.ChangeClient(ctx, st, w, by, "cl_nobody", operator.ClientDisable, now, warn); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("disable a client that does not exist: %v", err)
	}
	must(operator.ChangeClient(ctx, st, w, by, "cl_a", operator.ClientRemove, now, warn))
	if _, err := st.GetClient(ctx, "cl_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removed client: %v", err)
	}
	if tk, err := st.GetToken(ctx, "tok_a"); err != nil || !tk.Revoked {
		t.Errorf("the removed client's token: %+v %v", tk, err)
	}
	var lines []string
	for _, r := range records(t, st) {
		lines = append(lines, summary(r))
		if r.Kind == audit.KindDecision && !strings.HasPrefix(r.Explanation, "the operator ") {
			t.Errorf("explanation: %q", r.Explanation)
		}
	}
	want := []string{
		"client.disable|decision|disable requested||cli:test|", "client.disable|outcome|success||cli:test|",
		"client.enable|decision|enable requested||cli:test|", "client.enable|outcome|success||cli:test|",
		"client.disable|decision|disable requested||cli:test|", "client.disable|outcome|error|INVALID_REQUEST|cli:test|",
		"client.remove|decision|remove requested||cli:test|", "client.remove|outcome|success||cli:test|",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// Without a log that records: a disable is made and said unrecorded, an enable is not made.
	var warned []error
	warnInto := func(err error) { warned = append(warned, err) }
	none := closed(t, st)
	must(operator.ChangeClient(ctx, st, none, by, "cl_b", operator.ClientDisable, now, warnInto))
	if !disabled("cl_b") || len(warned) != 1 {
		t.Errorf("an unrecorded disable: disabled %v, warned %v", disabled("cl_b"), warned)
	}
	if err := operator.ChangeClient(ctx, st, none, by, "cl_b", operator.ClientEnable, now, warnInto); err == nil || !disabled("cl_b") {
		t.Errorf("an unrecorded enable was made: %v", err)
	}
	if _, ok := operator.ParseClientAction("delete"); ok {
		t.Error("ParseClientAction accepts delete")
	}
}

func TestValidClientName(t *testing.T) {
	ValidClientName, MaxClientNameBytes := operator.ValidClientName, operator.MaxClientNameBytes
	for _, ok := range []string{"a", "my-agent", "Claude Desktop", "agent_2.1", strings.Repeat("a", MaxClientNameBytes)} {
		if err := ValidClientName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", " a", "a ", "-a", ".a", strings.Repeat("a", MaxClientNameBytes+1), strings.Repeat("a", 500),
		"a\u202eb", "аgent" /* Cyrillic а */, "a\tb", "a\nb", "a\x00b", "a/b", "a<b>", "agent\u200b", "ａgent", "a;b"} {
		if err := ValidClientName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
