package registry_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Readers running while apps are re-registered and toggled see each index whole: the
// capabilities of one version or the other, never a mix, and always with their own app.
func TestConcurrentReadersSeeWholeIndexes(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	v1 := manifestJSON(t, "org.example.flip", "1.0.0",
		capability("flip.org.example.flip.a", "read", "permission", "flip.a"),
		capability("flip.org.example.flip.b", "read", "permission", "flip.b"))
	v2 := manifestJSON(t, "org.example.flip", "2.0.0",
		capability("flip.org.example.flip.a", "write", "permission", "flip.a"),
		capability("flip.org.example.flip.c", "write", "permission", "flip.c"))
	register(t, r, v1, "")
	register(t, r, manifestJSON(t, "org.example.tog", "1.0.0",
		capability("flip.org.example.tog.t", "read", "permission", "flip.t")), "")

	const a, b, c, tg = "flip.org.example.flip.a", "flip.org.example.flip.b", "flip.org.example.flip.c", "flip.org.example.tog.t"
	whole := map[string]string{ // the capabilities Covered may return → the flip version they belong to
		a + "," + b:            "1.0.0",
		a + "," + b + "," + tg: "1.0.0",
		a + "," + c:            "2.0.0",
		a + "," + c + "," + tg: "2.0.0",
	}

	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Sprintf(format, args...):
		default:
		}
	}
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := r.Covered([]string{"flip.*"})
				key := strings.Join(ids(got), ",")
				version, ok := whole[key]
				if !ok {
					report("Covered = %s: a half-updated index", key)
					continue
				}
				for _, cp := range got {
					if cp.App.Doc.Manifest().Capability(cp.Cap.ID) != cp.Cap {
						report("capability %s is not its app's", cp.Cap.ID)
					}
					if cp.App.ID.String() == "org.example.flip" && cp.App.Doc.Manifest().Version != version {
						report("capability set of %s with an app of version %s", version, cp.App.Doc.Manifest().Version)
					}
				}
				if cp, ok := r.Method("flip", "a"); !ok || cp.Params == nil {
					report("Method(flip, a) = %v", ok)
				}
				if risk := r.RiskOf("flip.*"); risk == "" {
					report("RiskOf(flip.*) is empty")
				}
				if len(r.List()) != 2 {
					report("List has %d apps", len(r.List()))
				}
				if app, ok := r.App("tog"); !ok || app.ID.String() != "org.example.tog" {
					report("App(tog) = %v", ok)
				}
				reads.Add(1)
			}
		})
	}

	for i := range 40 {
		data := v1
		if i%2 == 0 {
			data = v2
		}
		if _, err := r.Register(t.Context(), data, ""); err != nil {
			t.Error(err)
		}
		if err := r.SetEnabled(t.Context(), "org.example.tog", i%2 == 1); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if reads.Load() == 0 {
		t.Error("no reader ran")
	}
}
