package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// replicas opens two stores, two pools, on one fresh schema: two gateway replicas.
func replicas(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	dsn := pgtest.Schema(t)
	return open(t, dsn), open(t, dsn)
}

// TestReplicasDerivedTakeUse takes uses of a tree of derived tokens from many goroutines
// through two stores: every token's Uses must be exactly the successful uses of it and of the
// tokens derived from it, no limit may be passed, and no use may fail for any reason but
// exhaustion (a deadlock would show here).
func TestReplicasDerivedTakeUse(t *testing.T) {
	a, b := replicas(t)
	ctx := t.Context()
	now := time.Now()
	//   root (40) ─┬─ c1 (25) ─── g1 (unlimited)
	//              └─ c2 (25) ─── g2 (10)
	parent := map[string]string{"root": "", "c1": "root", "c2": "root", "g1": "c1", "g2": "c2"}
	maxUses := map[string]int64{"root": 40, "c1": 25, "c2": 25, "g1": 0, "g2": 10}
	for _, id := range []string{"root", "c1", "c2", "g1", "g2"} {
		must(t, a.PutToken(ctx, store.Token{ID: id, ParentID: parent[id], ClientID: "cl_1",
			IssuedAt: now, ExpiresAt: now.Add(time.Hour), MaxUses: maxUses[id]}))
	}
	ids := []string{"g1", "g2", "c1", "c2", "root", "g1", "g2"}
	const workers, each = 32, 8
	var mu sync.Mutex
	got := map[string][]int64{} // successful TakeUse results per token
	var wg sync.WaitGroup
	for w := range workers {
		s := []*postgres.Store{a, b}[w%2]
		wg.Go(func() {
			for i := range each {
				id := ids[(w+i)%len(ids)]
				n, err := s.TakeUse(ctx, id, now)
				if err != nil && !errors.Is(err, store.ErrExhausted) {
					t.Errorf("TakeUse %s: %v", id, err)
					continue
				}
				if err == nil {
					mu.Lock()
					got[id] = append(got[id], n)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	// taken[x]: successful uses of x and of every token derived from it.
	taken := map[string]int64{}
	for id, ns := range got {
		for x := id; x != ""; x = parent[x] {
			taken[x] += int64(len(ns))
		}
	}
	if taken["root"] != maxUses["root"] {
		t.Errorf("%d uses in all, want the root's MaxUses, %d", taken["root"], maxUses["root"])
	}
	for id := range parent {
		tok, err := b.GetToken(ctx, id)
		must(t, err)
		if tok.Uses != taken[id] {
			t.Errorf("%s: Uses %d, want %d (its successful uses and its descendants')", id, tok.Uses, taken[id])
		}
		if maxUses[id] > 0 && tok.Uses > maxUses[id] {
			t.Errorf("%s: Uses %d past MaxUses %d", id, tok.Uses, maxUses[id])
		}
		// Each use of a token counts once: the results TakeUse returned for it are distinct.
		ns := slices.Sorted(slices.Values(got[id]))
		if len(slices.Compact(slices.Clone(ns))) != len(ns) {
			t.Errorf("%s: TakeUse returned one count twice: %v", id, ns)
		}
	}
}

// TestReplicasRevokeWhileTaking revokes a token while the other replica takes uses of tokens
// derived from it: after Revoke returns, no use may succeed, and no call may fail with
// anything but ErrRevoked or success.
func TestReplicasRevokeWhileTaking(t *testing.T) {
	a, b := replicas(t)
	ctx := t.Context()
	now := time.Now()
	must(t, a.PutToken(ctx, store.Token{ID: "root", ClientID: "cl_1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	for i := range 8 {
		must(t, a.PutToken(ctx, store.Token{ID: fmt.Sprint("c", i), ParentID: "root", ClientID: "cl_1",
			IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprint("c", i)
				if _, err := b.TakeUse(ctx, id, now); err != nil && !errors.Is(err, store.ErrRevoked) {
					t.Errorf("TakeUse %s: %v", id, err)
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let the uses run
	must(t, a.Revoke(ctx, "root", now))
	for i := range 8 {
		id := fmt.Sprint("c", i)
		if _, err := b.TakeUse(ctx, id, now); !errors.Is(err, store.ErrRevoked) {
			t.Errorf("TakeUse %s after Revoke returned: %v, want ErrRevoked", id, err)
		}
		tok, err := b.GetToken(ctx, id)
		must(t, err)
		if !tok.Revoked {
			t.Errorf("%s not marked revoked", id)
		}
	}
	close(stop)
	wg.Wait()
}

// TestReplicasAppendAudit races two replicas appending after the same head, round after
// round: in each exactly one wins and the other gets ErrConflict, whichever way the race
// goes; then both append in a loop, retrying on conflict, and the chain must stay gapless.
func TestReplicasAppendAudit(t *testing.T) {
	a, b := replicas(t)
	ctx := t.Context()
	var head store.AuditEntry
	for round := range 40 {
		batches := [2][]store.AuditEntry{storetest.EntriesAfter(head, 1+round%3, "a"), storetest.EntriesAfter(head, 2, "b")}
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range []*postgres.Store{a, b} {
			wg.Go(func() {
				<-start
				errs[i] = s.AppendAudit(ctx, batches[i])
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("round %d: both replicas appended after the same head", round)
				}
				won = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d: replica %d: %v, want nil or ErrConflict", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither replica appended: %v", round, errs)
		}
		h, err := b.AuditHead(ctx)
		must(t, err)
		if want := batches[won][len(batches[won])-1]; h.Seq != want.Seq || h.Hash != want.Hash {
			t.Fatalf("round %d: head is %d %s, want the winner's %d %s", round, h.Seq, h.Hash, want.Seq, want.Hash)
		}
		head = h
	}

	const each = 25
	var wg sync.WaitGroup
	for w, s := range []*postgres.Store{a, b, a, b} {
		wg.Go(func() {
			for i := range each {
				if !storetest.AppendAfterHead(t, s, fmt.Sprintf("w%d-%d", w, i)) {
					return
				}
			}
		})
	}
	wg.Wait()
	es, err := a.AuditRange(ctx, 1, 0, 0)
	must(t, err)
	if want := head.Seq + 4*each; int64(len(es)) != want {
		t.Fatalf("%d entries, want %d", len(es), want)
	}
	prev := ""
	for i, e := range es {
		if e.Seq != int64(i+1) || e.PrevHash != prev {
			t.Fatalf("entry %d (Seq %d) breaks the chain", i, e.Seq)
		}
		prev = e.Hash
	}
}

// TestReplicasPutSameApp puts one new app, alias and all, from both replicas at once, as
// replicas starting together register their built-in apps: every put must succeed, since the
// alias is the app's own. (PostgreSQL's INSERT ... ON CONFLICT on the app id reports a
// concurrent insert's alias as a unique violation.)
func TestReplicasPutSameApp(t *testing.T) {
	a, b := replicas(t)
	ctx := t.Context()
	for round := range 20 {
		app := store.App{AppID: fmt.Sprint("org.example.app", round), Alias: fmt.Sprint("app", round),
			Tier: 2, Manifest: []byte("{}"), Enabled: true}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			s := []*postgres.Store{a, b}[i%2]
			wg.Go(func() {
				<-start
				if err := s.PutApp(ctx, app); err != nil {
					t.Errorf("round %d: PutApp: %v", round, err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
}
