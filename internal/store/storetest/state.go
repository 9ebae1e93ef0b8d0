package storetest

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/capgate/capgate/internal/store"
)

func testState(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("GetPutDelete", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetState(ctx, "org.example.a", "k")
		wantErr(t, "GetState missing", err, store.ErrNotFound)
		must(t, "PutState", s.PutState(ctx, "org.example.a", "k", []byte("v1\x00\xff")))
		v, err := s.GetState(ctx, "org.example.a", "k")
		must(t, "GetState", err)
		if string(v) != "v1\x00\xff" {
			t.Errorf("GetState = %q", v)
		}
		must(t, "PutState overwrite", s.PutState(ctx, "org.example.a", "k", []byte("v2")))
		v, err = s.GetState(ctx, "org.example.a", "k")
		must(t, "GetState", err)
		if string(v) != "v2" {
			t.Errorf("GetState after overwrite = %q", v)
		}
		// Keys belong to their app.
		_, err = s.GetState(ctx, "org.example.b", "k")
		wantErr(t, "GetState other app", err, store.ErrNotFound)

		// An empty value is a value; nil deletes.
		must(t, "PutState empty", s.PutState(ctx, "org.example.a", "empty", []byte{}))
		v, err = s.GetState(ctx, "org.example.a", "empty")
		must(t, "GetState empty", err)
		if len(v) != 0 {
			t.Errorf("GetState empty = %q", v)
		}
		must(t, "PutState nil", s.PutState(ctx, "org.example.a", "k", nil))
		_, err = s.GetState(ctx, "org.example.a", "k")
		wantErr(t, "GetState after delete", err, store.ErrNotFound)
		must(t, "PutState nil on a missing key", s.PutState(ctx, "org.example.a", "never", nil))
	})

	t.Run("CreateOnce", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "CreateState", s.CreateState(ctx, "org.example.a", "pin", []byte("first")))
		wantErr(t, "CreateState again", s.CreateState(ctx, "org.example.a", "pin", []byte("second")), store.ErrExists)
		v, err := s.GetState(ctx, "org.example.a", "pin")
		must(t, "GetState", err)
		if string(v) != "first" {
			t.Errorf("a second CreateState replaced the value: %q", v)
		}
		must(t, "CreateState other app", s.CreateState(ctx, "org.example.b", "pin", []byte("b")))
		must(t, "CreateState empty", s.CreateState(ctx, "org.example.a", "empty", []byte{}))
		wantErr(t, "CreateState on an empty value", s.CreateState(ctx, "org.example.a", "empty", []byte("x")), store.ErrExists)
		if err := s.CreateState(ctx, "org.example.a", "nil", nil); err == nil {
			t.Error("CreateState with a nil value succeeded")
		}
		// Racing creators: exactly one wins, and every one reads the winner's value.
		const n = 16
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.CreateState(ctx, "org.example.a", "race", []byte{byte(i)})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, store.ErrExists):
					t.Errorf("CreateState racing: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Errorf("%d racing CreateState calls won", wins.Load())
		}
	})

	t.Run("ListByPrefix", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		keys := []string{
			"undo/1", "undo/2", "undo/10", "undo", "undoX", "Undo/1", "settings",
			"a%b", "a%bc", "axb", "axbc", "a_c", "abc",
			"é/1", "é/2", "f",
			"\U0010FFFF", "\U0010FFFFx", "\U0010FFFE",
		}
		for _, k := range keys {
			must(t, "PutState "+k, s.PutState(ctx, "org.example.a", k, []byte("v:"+k)))
		}
		must(t, "PutState other app", s.PutState(ctx, "org.example.b", "undo/1", []byte("b")))

		list := func(prefix string) []string {
			t.Helper()
			m, err := s.ListState(ctx, "org.example.a", prefix)
			must(t, "ListState "+prefix, err)
			for k, v := range m {
				if string(v) != "v:"+k {
					t.Errorf("ListState %q: %q = %q", prefix, k, v)
				}
			}
			return slices.Sorted(maps.Keys(m))
		}
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"undo/", []string{"undo/1", "undo/10", "undo/2"}},
			{"undo", []string{"undo", "undo/1", "undo/10", "undo/2", "undoX"}},
			{"a%", []string{"a%b", "a%bc"}}, // % is not a wildcard
			{"a%b", []string{"a%b", "a%bc"}},
			{"a_", []string{"a_c"}},                               // _ is not a wildcard
			{"U", []string{"Undo/1"}},                             // case matters
			{"é/", []string{"é/1", "é/2"}},                        // multi-byte
			{"\U0010FFFF", []string{"\U0010FFFF", "\U0010FFFFx"}}, // the highest code point
			{"nothing", nil},
		} {
			if got := list(tc.prefix); !slices.Equal(got, tc.want) {
				t.Errorf("ListState(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		}
		all := list("")
		if want := slices.Sorted(slices.Values(keys)); !slices.Equal(all, want) {
			t.Errorf("ListState(\"\") = %q, want %q", all, want)
		}
		m, err := s.ListState(ctx, "org.example.none", "")
		must(t, "ListState of an app without state", err)
		if len(m) != 0 {
			t.Errorf("ListState of an app without state: %d keys", len(m))
		}
	})
}
