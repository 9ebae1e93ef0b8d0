package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// watchWait bounds how long a test waits for a notification or for Watch to listen: they
// come in milliseconds, and a test that waits this long has failed.
const watchWait = 20 * time.Second

// watching is a running Watch and the topics it has heard.
type watching struct {
	mu     sync.Mutex
	topics []string
	heard  chan struct{} // signalled on each topic
	done   chan error    // Watch's result
	cancel context.CancelFunc
}

// watch starts s.Watch, ended when the test ends.
func watch(t *testing.T, s *postgres.Store) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{heard: make(chan struct{}, 1), done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- s.Watch(ctx, func(topic string) {
			w.mu.Lock()
			w.topics = append(w.topics, topic)
			w.mu.Unlock()
			select {
			case w.heard <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(watchWait):
			t.Errorf("Watch did not return after its context ended")
		}
	})
	return w
}

// wait waits until the Watch has heard n topics, and returns them.
func (w *watching) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(watchWait)
	for {
		w.mu.Lock()
		got := slices.Clone(w.topics)
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-w.heard:
		case <-deadline:
			t.Fatalf("heard %q, waited for %d topics", got, n)
		}
	}
}

// waitListening waits until n Watch connections LISTEN on the channel of dsn's schema, so
// that every change committed afterwards is heard.
func waitListening(t *testing.T, dsn string, n int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	must(t, err)
	defer conn.Close(context.Background())
	deadline := time.Now().Add(watchWait)
	for {
		var got int
		// A connection shows its last statement, and state idle once it has finished.
		must(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'idle' AND application_name = 'capgate watch'
				AND query LIKE 'LISTEN %' || capgate_channel(current_schema()) || '%'`).Scan(&got))
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections listening, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatch checks that a change committed through one replica is heard by every Watch on its
// schema, its own included, once per change and with the right topic, and by no Watch on
// another schema.
func TestWatch(t *testing.T) {
	ctx := t.Context()
	dsn, otherDSN := pgtest.Schema(t), pgtest.Schema(t)
	a, b, other := open(t, dsn), open(t, dsn), open(t, otherDSN)
	wa, wb, wOther := watch(t, a), watch(t, b), watch(t, other)
	waitListening(t, dsn, 2)
	waitListening(t, otherDSN, 1)

	now := time.Now()
	must(t, a.PutToken(ctx, store.Token{ID: "tk_1", ClientID: "cl_1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	_, err := a.TakeUse(ctx, "tk_1", now) // neither a revision nor a consent
	must(t, err)
	must(t, a.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "act"}))
	must(t, a.PutConsent(ctx, store.Consent{ID: "cr_1", ClientID: "cl_1", Kind: "call",
		State: store.ConsentPending, Created: now, Expires: now.Add(time.Hour)}))
	must(t, a.AnswerConsent(ctx, "cr_1", store.ConsentApproved, "person", "", now))
	must(t, a.Revoke(ctx, "tk_1", now))
	want := []string{store.TopicRevision, store.TopicConsent, store.TopicConsent, store.TopicRevision}
	for name, w := range map[string]*watching{"replica b": wb, "replica a itself": wa} {
		if got := w.wait(t, len(want)); !slices.Equal(got, want) {
			t.Errorf("%s heard %q, want %q", name, got, want)
		}
	}

	// Notifications reach a listener in commit order: once the other schema's Watch hears
	// its own change, which committed last, it would have heard any of the changes above.
	must(t, other.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "ask"}))
	if got := wOther.wait(t, 1); !slices.Equal(got, []string{store.TopicRevision}) {
		t.Errorf("a Watch on another schema heard %q, want only its own change", got)
	}
	// And the first schema's Watches did not hear the other's change: they hear their own.
	must(t, b.DeleteMandate(ctx, "fs.read"))
	if got := wb.wait(t, len(want)+1); !slices.Equal(got, append(want, store.TopicRevision)) {
		t.Errorf("replica b heard %q after its own change, want %q", got, append(want, store.TopicRevision))
	}
}

// TestWatchEnds checks that Watch returns its context's error when the context ends, and an
// error when the store is closed under it.
func TestWatchEnds(t *testing.T) {
	dsn := pgtest.Schema(t)
	s := open(t, dsn)
	w := watch(t, s)
	waitListening(t, dsn, 1)
	w.cancel()
	select {
	case err := <-w.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
		w.done <- err // for the cleanup
	case <-time.After(watchWait):
		t.Fatal("Watch did not return after its context ended")
	}

	w = watch(t, s)
	waitListening(t, dsn, 1)
	must(t, s.Close())
	select {
	case err := <-w.done:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("Watch on a closed store returned %v, want the store's error", err)
		}
		w.done <- err
	case <-time.After(watchWait):
		t.Fatal("Watch did not return after Close")
	}
	if err := s.Watch(t.Context(), func(string) {}); err == nil {
		t.Error("Watch after Close: no error")
	}
	if err := open(t, dsn).Watch(t.Context(), nil); err == nil {
		t.Error("Watch with a nil fn: no error")
	}
}

// TestWatchReconnect cuts Watch's connection from the server side: Watch must connect again,
// tell of every topic once (changes may have been missed), and hear changes after.
func TestWatchReconnect(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Schema(t)
	s := open(t, dsn)
	w := watch(t, s)
	waitListening(t, dsn, 1)

	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(context.Background())
	var killed int
	must(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'capgate watch'
			AND query LIKE 'LISTEN %' || capgate_channel(current_schema()) || '%'`).Scan(&killed))
	if killed != 1 {
		t.Fatalf("terminated %d Watch connections, want 1", killed)
	}
	got := w.wait(t, 2)
	if !slices.Equal(slices.Sorted(slices.Values(got)), []string{store.TopicConsent, store.TopicRevision}) {
		t.Errorf("after a lost connection Watch told %q, want every topic once", got)
	}
	waitListening(t, dsn, 1)
	must(t, s.PutApp(ctx, store.App{AppID: "org.example.a", Manifest: []byte("{}")}))
	if got := w.wait(t, 3); got[2] != store.TopicRevision {
		t.Errorf("after reconnecting Watch heard %q, want a revision", got[2])
	}
}
