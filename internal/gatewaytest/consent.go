package gatewaytest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// AnswerNext answers the next consent request of kind ("": of any kind) that becomes pending
// in st with answer, from its own goroutine, as the person on the approval surface would;
// requests pending already are left alone. The channel yields the request's id, or "" when
// none came within 10 s: whether one had to come is the test's to check. The test must
// receive from the channel before it ends.
func AnswerNext(t testing.TB, st store.Consents, kind string, answer func(ctx context.Context, id string) error) <-chan string {
	t.Helper()
	ctx := context.Background()
	before := map[string]bool{}
	cs, err := st.ListConsents(ctx, store.ConsentPending)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		before[c.ID] = true
	}
	got := make(chan string, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			cs, err := st.ListConsents(ctx, store.ConsentPending)
			if err != nil {
				t.Error(err)
				break
			}
			for _, c := range cs {
				if (kind == "" || c.Kind == kind) && !before[c.ID] {
					if err := answer(ctx, c.ID); err != nil {
						t.Errorf("answering %s: %v", c.ID, err)
					}
					got <- c.ID
					return
				}
			}
		}
		got <- ""
	}()
	return got
}

// WaitPending waits up to 10 s for a consent request of kind ("": of any kind) to be pending
// in st, other than those whose ids are known, and returns its id; none fails the test.
func WaitPending(t testing.TB, st store.Consents, kind string, known ...string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		cs, err := st.ListConsents(context.Background(), store.ConsentPending)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if (kind == "" || c.Kind == kind) && !slices.Contains(known, c.ID) {
				return c.ID
			}
		}
	}
	t.Fatalf("no %s consent request became pending", cmp.Or(kind, "new"))
	return ""
}
