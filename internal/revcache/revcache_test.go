package revcache

import (
	"sync"
	"testing"
)

func TestMapRule(t *testing.T) {
	var c Map[string, int]
	c.Put(5, "a", 1)
	if v, ok := c.Get(5, "a"); !ok || v != 1 {
		t.Fatalf("Get at the fill's revision: %d %v", v, ok)
	}
	if v, ok := c.Ref(5, "a"); !ok || *v != 1 {
		t.Fatalf("Ref at the fill's revision: %v %v", v, ok)
	}
	if _, ok := c.Get(4, "a"); ok {
		t.Error("a lookup at an older revision was served a newer fill")
	}
	if _, ok := c.Ref(4, "a"); ok {
		t.Error("Ref at an older revision was served a newer fill")
	}
	// A fill read before the change that moved the cache to 6 lands late: dropped.
	if _, ok := c.Get(6, "a"); ok {
		t.Error("a lookup at a newer revision was served an older fill")
	}
	c.Put(5, "b", 2)
	if _, ok := c.Get(6, "b"); ok {
		t.Error("a late fill was kept")
	}
	if _, ok := c.Get(5, "b"); ok {
		t.Error("a late fill was kept at its own revision after the cache moved on")
	}
	c.Put(6, "b", 3)
	if v, ok := c.Get(6, "b"); !ok || v != 3 {
		t.Errorf("a fill at the cache's revision: %d %v", v, ok)
	}
	c.Update(6, "b", func(v int) int { return v + 1 })
	c.Update(5, "b", func(v int) int { return 100 })
	c.Update(6, "missing", func(v int) int { return 100 })
	if v, _ := c.Get(6, "b"); v != 4 {
		t.Errorf("Update: %d", v)
	}
	if _, ok := c.Get(6, "missing"); ok {
		t.Error("Update made an entry")
	}
	c.Delete("b")
	if _, ok := c.Get(6, "b"); ok {
		t.Error("Delete")
	}
	c.Put(6, "c", 1)
	c.Clear()
	if _, ok := c.Get(6, "c"); ok {
		t.Error("Clear")
	}
	// A fill at a newer revision moves the cache there.
	c.Put(9, "d", 1)
	if _, ok := c.Get(6, "c"); ok {
		t.Error("an older lookup after the cache moved")
	}
}

func TestMapBound(t *testing.T) {
	c := Map[int, int]{Max: 3}
	for i := range 10 {
		c.Put(1, i, i)
	}
	n := 0
	for i := range 10 {
		if _, ok := c.Get(1, i); ok {
			n++
		}
	}
	if n > 3 || n == 0 {
		t.Errorf("%d entries held, max 3", n)
	}
}

func TestValueRule(t *testing.T) {
	var c Value[string]
	if _, ok := c.Get(0); ok {
		t.Error("the zero Value holds something")
	}
	c.Put(2, "two")
	if v, ok := c.Get(2); !ok || v != "two" {
		t.Fatalf("%q %v", v, ok)
	}
	if _, ok := c.Get(3); ok {
		t.Error("served at a newer revision")
	}
	c.Put(3, "three")
	c.Put(2, "late")
	if v, _ := c.Get(3); v != "three" {
		t.Errorf("a late fill replaced a newer one: %q", v)
	}
	c.Clear()
	if _, ok := c.Get(3); ok {
		t.Error("Clear")
	}
	c.Put(2, "late again")
	if _, ok := c.Get(2); ok {
		t.Error("a fill older than the cleared revision was kept")
	}
}

// Concurrent fills and lookups at moving revisions never serve a value filled at another
// revision than the lookup's (run with -race).
func TestConcurrent(t *testing.T) {
	var c Map[int, int64]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				rev := int64(i / 100)
				if g%2 == 0 {
					c.Put(rev, i%10, rev)
				} else if v, ok := c.Get(rev, i%10); ok && v != rev {
					t.Errorf("at revision %d got a value filled at %d", rev, v)
					return
				}
			}
		}()
	}
	wg.Wait()
}
