package mcp

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// onlyHoldings hides every method of a store but store.Holdings: a store without a change
// counter, as PostgreSQL is.
type onlyHoldings struct{ store.Holdings }

func handlesOf(hs []store.Holding) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Handle)
	}
	return out
}

// A client's held tokens come from memory until a holding is kept or dropped, by this
// process or another on the same file, and an expiry is applied at each use.
func TestHeldTokensReadTheStoreOnlyAfterAChange(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "capgate.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := open(), open()
	now := time.Now()
	put := func(s *sqlite.Store, handle string, expires time.Time) {
		t.Helper()
		h := store.Holding{Handle: handle, ClientID: "cl_a", TokenID: "tok_" + handle, Wire: "w", Grants: []string{"app.notes.read"},
			ExpiresAt: expires, Created: now}
		if err := s.PutHolding(ctx, h, MaxHeldTokens); err != nil {
			t.Fatal(err)
		}
	}
	var c heldCache
	want := func(at time.Time, handles []string, reads int64) {
		t.Helper()
		got, err := c.list(ctx, s, "cl_a", at)
		if err != nil {
			t.Fatal(err)
		}
		// The store orders by creation, then handle: the same creation here.
		slices.Sort(handles)
		if !slices.Equal(handlesOf(got), handles) || c.reads.Load() != reads {
			t.Fatalf("held %v after %d store reads, want %v after %d", handlesOf(got), c.reads.Load(), handles, reads)
		}
	}
	put(s, newHandle(), now.Add(time.Hour))
	first, _ := s.ListHoldings(ctx, "cl_a", now)
	h1 := first[0].Handle
	want(now, []string{h1}, 1)
	want(now, []string{h1}, 1) // nothing changed: from memory

	// What the caller does with the list is its own.
	got, _ := c.list(ctx, s, "cl_a", now)
	got[0].Handle = "changed"
	want(now, []string{h1}, 1)

	// Another process keeps a token for the client: the next use reads it.
	h2 := newHandle()
	put(other, h2, now.Add(time.Minute))
	want(now, []string{h1, h2}, 2)
	// The second expires: from memory, it is gone at its expiry.
	want(now.Add(time.Minute), []string{h1}, 2)
	// Another process drops the first.
	if err := other.DeleteHolding(ctx, h1); err != nil {
		t.Fatal(err)
	}
	want(now, []string{h2}, 3)
	// Another client's list is its own.
	if got, err := c.list(ctx, s, "cl_b", now); err != nil || len(got) != 0 {
		t.Fatalf("cl_b: %v %v", got, err)
	}

	// A store without the counter is read every time.
	var plain heldCache
	for i := range 3 {
		if _, err := plain.list(ctx, onlyHoldings{s}, "cl_a", now); err != nil {
			t.Fatal(err)
		}
		if n := plain.reads.Load(); n != int64(i+1) {
			t.Fatalf("without a counter: %d reads after %d lists", n, i+1)
		}
	}
}

// The cache keeps at most MaxCachedHolders clients.
func TestHeldCacheBounded(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var c heldCache
	for i := range MaxCachedHolders + 10 {
		if _, err := c.list(ctx, s, fmt.Sprintf("cl_%d", i), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.m); n > MaxCachedHolders {
		t.Fatalf("%d clients kept, at most %d", n, MaxCachedHolders)
	}
}

// A call that names no handle picks among the held tokens from the cache.
func TestCoveringUsesTheCache(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &Handler{o: Options{Holdings: s}}
	hd := store.Holding{Handle: newHandle(), ClientID: "cl_a", TokenID: "tok_1", Wire: "w", Grants: []string{"app.notes.*"},
		ExpiresAt: time.Now().Add(time.Hour), Created: time.Now()}
	if err := s.PutHolding(ctx, hd, MaxHeldTokens); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := h.covering(ctx, "cl_a", "app.notes.read")
		if err != nil || len(got) != 1 || got[0].Handle != hd.Handle {
			t.Fatalf("covering: %v %v", handlesOf(got), err)
		}
	}
	if n := h.held.reads.Load(); n != 1 {
		t.Fatalf("three picks read the store %d times, want 1", n)
	}
}
