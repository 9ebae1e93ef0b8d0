package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// pausing is the env's real store, with a read that can be held after it has read: the
// interleaving of a fill that read before a change and lands after the change was noticed.
type pausing struct {
	store.Store
	mu      sync.Mutex
	armed   string        // the method to hold next: "ListMandates" or "GetToken"
	read    chan struct{} // closed once the held read has read
	release chan struct{} // the held read returns when this is closed
}

func (p *pausing) arm(method string) {
	p.mu.Lock()
	p.armed, p.read, p.release = method, make(chan struct{}), make(chan struct{})
	p.mu.Unlock()
}

func (p *pausing) hold(method string) {
	p.mu.Lock()
	if p.armed != method {
		p.mu.Unlock()
		return
	}
	p.armed = ""
	read, release := p.read, p.release
	p.mu.Unlock()
	close(read)
	<-release
}

func (p *pausing) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	ms, err := p.Store.ListMandates(ctx)
	p.hold("ListMandates")
	return ms, err
}

func (p *pausing) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := p.Store.GetToken(ctx, id)
	p.hold("GetToken")
	return t, err
}

// A mandate set by another process while a fill of the mandates was reading is seen once
// Sync noticed the change: the fill, which read before it, is not kept.
func TestMandateFillRacingASync(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := &pausing{Store: e.st}
	e.b.o.Store = p
	if _, err := e.b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	p.arm("ListMandates")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.b.mandates(ctx) // reads no mandate, and is held
	}()
	<-p.read
	if err := otherProcess(t, e).PutMandate(ctx, store.Mandate{Permission: "app.notes.write", Autonomy: "handoff", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(p.release)
	<-done
	for i := range 3 {
		m, err := e.b.mandate(ctx, manifest.MustParsePermission("app.notes.write"))
		if err != nil || m == nil || m.Autonomy != "handoff" {
			t.Fatalf("decision %d after the sync: mandate %+v %v", i, m, err)
		}
	}
}

// A token revoked by another process while a fill of its state was reading is seen revoked
// once Sync noticed it.
func TestTokenFillRacingASync(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := &pausing{Store: e.st}
	e.b.o.Store = p
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	id := tokenID(t, wire)
	if _, err := e.b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	p.arm("GetToken")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.b.tokenState(ctx, id, "")
	}()
	<-p.read
	if err := otherProcess(t, e).Revoke(ctx, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	close(p.release)
	<-done
	st, err := e.b.tokenState(ctx, id, "")
	if err != nil || !st.revoked {
		t.Fatalf("after the sync: %+v %v", st, err)
	}
	if d := e.b.Explain(ctx, alice, call("write", `{"id":"9","text":"x"}`, wire)); d.Allowed() {
		t.Fatalf("explain allows a revoked token: %+v", d)
	}
}
