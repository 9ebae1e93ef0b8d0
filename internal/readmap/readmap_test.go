package readmap

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func val(s string) *string { return &s }

func get(m *Map[string, string], k string) (string, bool) {
	v, ok := m.Load(k)
	if !ok {
		return "", false
	}
	return *v, true
}

func TestMapStoreLoadDelete(t *testing.T) {
	var m Map[string, string]
	if _, ok := m.Load("a"); ok {
		t.Fatal("the zero map holds a")
	}
	// Enough keys for several folds, with recent keys left between them.
	for i := range 1000 {
		m.Store(fmt.Sprint(i), val(fmt.Sprint("v", i)))
	}
	if m.Len() != 1000 {
		t.Fatalf("Len = %d, want 1000", m.Len())
	}
	for i := range 1000 {
		if v, ok := get(&m, fmt.Sprint(i)); !ok || v != fmt.Sprint("v", i) {
			t.Fatalf("key %d: %q %v", i, v, ok)
		}
	}
	// A change of a frozen key is seen at once, without a fold.
	m.Store("5", val("changed"))
	if v, _ := get(&m, "5"); v != "changed" {
		t.Fatalf("changed key reads %q", v)
	}
	// Deleting frozen and recent keys, then storing one again.
	for i := range 600 {
		m.Delete(fmt.Sprint(i))
	}
	if m.Len() != 400 {
		t.Fatalf("Len after deletes = %d, want 400", m.Len())
	}
	for i := range 1000 {
		_, ok := m.Load(fmt.Sprint(i))
		if ok != (i >= 600) {
			t.Fatalf("key %d present = %v after deletes", i, ok)
		}
	}
	m.Store("7", val("again"))
	if v, ok := get(&m, "7"); !ok || v != "again" || m.Len() != 401 {
		t.Fatalf("stored again: %q %v, Len %d", v, ok, m.Len())
	}
	m.Delete("never")
	m.Clear()
	if _, ok := m.Load("900"); ok || m.Len() != 0 {
		t.Fatalf("Clear kept keys (Len %d)", m.Len())
	}
	m.Store("x", val("y"))
	if v, ok := get(&m, "x"); !ok || v != "y" {
		t.Fatal("a store after Clear is lost")
	}
}

func TestMapPrune(t *testing.T) {
	var m Map[int, int]
	for i := range 100 {
		m.Store(i, &i)
	}
	m.Prune(func(k int, v *int) bool { return k%3 == 0 && *v == k })
	if m.Len() != 34 {
		t.Fatalf("Len after Prune = %d, want 34", m.Len())
	}
	for i := range 100 {
		if _, ok := m.Load(i); ok != (i%3 == 0) {
			t.Fatalf("key %d present = %v after Prune", i, ok)
		}
	}
	m.Store(1000, new(int)) // a recent key, not yet folded
	m.Delete(3)
	seen := map[int]bool{}
	m.Range(func(k int, _ *int) bool { seen[k] = true; return true })
	if len(seen) != 34 || !seen[1000] || seen[3] || seen[1] {
		t.Fatalf("Range saw %d keys (1000: %v, 3: %v)", len(seen), seen[1000], seen[3])
	}
	n := 0
	m.Range(func(int, *int) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("Range went on after false: %d calls", n)
	}
}

// TestMapConcurrent has readers look up keys while writers add, change, delete and prune
// them: a reader never sees a value that was not stored for its key, and a key stored and
// not deleted since is always found. Run it under -race.
func TestMapConcurrent(t *testing.T) {
	var m Map[int, [2]int]
	const stable = 64 // keys stored first and never deleted: always found
	for k := range stable {
		m.Store(k, &[2]int{k, 0})
	}
	var stop atomic.Bool
	var readers, writers sync.WaitGroup
	var bad atomic.Value
	for r := range 4 {
		readers.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := (i*7 + r) % 512
				v, ok := m.Load(k)
				if ok && v[0] != k {
					bad.Store(fmt.Sprintf("key %d read value of key %d", k, v[0]))
					return
				}
				if k < stable && !ok {
					bad.Store(fmt.Sprintf("stable key %d missed", k))
					return
				}
			}
		})
	}
	for w := range 2 {
		writers.Go(func() {
			for i := range 20000 {
				k := stable + (i*13+w)%448
				switch i % 5 {
				case 0, 1, 2:
					m.Store(k, &[2]int{k, i})
				case 3:
					m.Delete(k)
				default:
					if i%500 == 4 {
						m.Prune(func(k int, _ *[2]int) bool { return k < stable || k%2 == 0 })
					}
					m.Store(k%stable, &[2]int{k % stable, i}) // changes a stable key
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if s := bad.Load(); s != nil {
		t.Fatal(s)
	}
}

// BenchmarkLoad is a lookup of a present key from every core at once: the read-mostly map
// against a map behind a sync.RWMutex.
func BenchmarkLoad(b *testing.B) {
	keys := make([]string, 64)
	var m Map[string, int]
	locked := map[string]*int{}
	var mu sync.RWMutex
	for i := range keys {
		keys[i] = fmt.Sprintf("tok_%040d", i)
		m.Store(keys[i], &i)
		locked[keys[i]] = &i
	}
	b.Run("readmap", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := m.Load(keys[i&63]); !ok {
					b.Fatal("missed")
				}
				i++
			}
		})
	})
	b.Run("rwmutex", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				mu.RLock()
				_, ok := locked[keys[i&63]]
				mu.RUnlock()
				if !ok {
					b.Fatal("missed")
				}
				i++
			}
		})
	})
}
