package gatewaytest

import (
	"context"
	"testing"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/store"
)

// AuditRecords are the records of st's audit log, oldest first; an entry that does not decode
// (audit.DecodeEntry) fails the test.
func AuditRecords(t testing.TB, st store.Audit) []audit.Record {
	t.Helper()
	es, err := st.AuditRange(context.Background(), 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]audit.Record, len(es))
	for i, en := range es {
		d, err := audit.DecodeEntry(en)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.Record
	}
	return out
}
