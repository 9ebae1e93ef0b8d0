package policy

import (
	"fmt"
	"sync"
	"testing"
)

// allowedText gives every name its own text, from any number of goroutines at once, while
// names are added and merged, and keeps no more than maxAllowedTexts of them.
func TestAllowedText(t *testing.T) {
	const names = maxAllowedTexts + 500
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range names {
				// Each goroutine walks the names from another start, so that adds, reads
				// and merges interleave.
				id := fmt.Sprintf("app.org.example.a%d.act", (i+g*names/4)%names)
				if got, want := allowedText(id), "allowed: "+id+" may act"; got != want {
					t.Errorf("allowedText(%q) = %q", id, got)
					return
				}
			}
		})
	}
	wg.Wait()
	allowed.mu.Lock()
	kept := len(allowed.dirty)
	if r := allowed.read.Load(); r != nil {
		kept += len(*r)
	}
	allowed.mu.Unlock()
	if kept > maxAllowedTexts {
		t.Fatalf("%d texts kept, the bound is %d", kept, maxAllowedTexts)
	}
	if kept < maxAllowedTexts/2 {
		t.Fatalf("only %d texts kept of %d names", kept, names)
	}
}
