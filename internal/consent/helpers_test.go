package consent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// testPoll is the Poll of the tests' Services: short, so that answers given through
// another Service arrive quickly.
const testPoll = 10 * time.Millisecond

// clock is a settable clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openDB opens a SQLite store on a new file in t.TempDir and returns it and its path.
func openDB(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capgate.db")
	return openPath(t, path), path
}

// openPath opens another store on the file at path, as another process would.
func openPath(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var idSeq atomic.Uint64

// seqID makes distinct, valid request ids.
func seqID() string { return fmt.Sprintf("req_%024x", idSeq.Add(1)) }

// service returns a Service with a surface, testPoll and the clock on st.
func service(st consent.Store, clk *clock) *consent.Service {
	return consent.New(st, &consent.Options{Surface: true, Now: clk.Now, Poll: testPoll, NewID: seqID})
}

// quietService returns a Service that never polls in a test's lifetime: only its own
// notifications can wake its waiters.
func quietService(st consent.Store, clk *clock) *consent.Service {
	return consent.New(st, &consent.Options{Surface: true, Now: clk.Now, Poll: time.Hour, NewID: seqID})
}

// settle gives a goroutine just started time to reach its wait, so that what the test does
// next wakes it rather than is seen by its first read.
func settle() { time.Sleep(2 * testPoll) }

// callRequest is a call request as the broker would pass it.
func callRequest() consent.Request {
	return consent.Request{
		ClientID:      "cl_agent",
		ClientName:    "research agent",
		Kind:          consent.KindCall,
		CapabilityID:  "files.delete",
		Permission:    "fs.delete",
		Summary:       "Delete a file",
		Params:        []byte(`{"path":"/home/ada/notes.txt"}`),
		Risk:          "high",
		SideEffects:   "destructive",
		Reversibility: consent.Compensable,
		Remedy:        "Restore from trash",
		Reason:        "clean up the draft",
		AuditTag:      "cleanup",
		Wording:       "Let the research agent delete files in ~/notes without asking again",
	}
}

// waitAsync runs Wait in a goroutine and delivers its result.
type waitResult struct {
	c   store.Consent
	err error
}

func waitAsync(ctx context.Context, svc *consent.Service, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		c, err := svc.Wait(ctx, id)
		ch <- waitResult{c, err}
	}()
	return ch
}

// askWaiting asks svc for callRequest and starts a Wait on it, settled, so that the answer
// the test gives next wakes it.
func askWaiting(t *testing.T, ctx context.Context, svc *consent.Service) (store.Consent, <-chan waitResult) {
	t.Helper()
	c, err := svc.Ask(ctx, callRequest())
	must(t, err)
	got := waitAsync(ctx, svc, c.ID)
	settle()
	return c, got
}

// receive returns the result of a waitAsync, failing the test if none comes in time.
func receive(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	return within(t, ch, "Wait")
}

// within returns what ch delivers, failing the test, as a call of what that did not return,
// if nothing comes in time. The bound is generous: it catches a call that never wakes, it
// does not measure one.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal(what + " did not return")
		var zero T
		return zero
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
