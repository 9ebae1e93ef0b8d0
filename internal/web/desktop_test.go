package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/desktop"
)

// A desktop app is listed on the apps page as one, and one whose tree changed links to its
// review.
func TestAppsPageShowsDesktopReview(t *testing.T) {
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	tree := &desktop.Tree{App: desktop.App{Name: "org.example.Fake"}, Root: &desktop.Node{Role: "application", Path: []desktop.Step{},
		Children: []*desktop.Node{{Role: "push button", Name: "Go", Interfaces: []string{"Action"}, Actions: []string{"Click"},
			Path: []desktop.Step{{Role: "push button", Name: "Go"}}}}}}
	d, err := desktop.Derive(tree)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Registry.Register(e.ctx, d.Manifest, "fake"); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/ui/apps")
	if !strings.Contains(page, "desktop app") || strings.Contains(page, "review it") {
		t.Fatalf("the apps page before a review: %s", page)
	}
	rec := desktop.RecordOf(d, "org.example.Fake", time.Now())
	if err := desktop.SaveReview(e.ctx, e.g.Store, desktop.Review{ConsentID: "req_0123456789abcdef01234567", Record: rec, Manifest: d.Manifest}); err != nil {
		t.Fatal(err)
	}
	_, page = b.get("/ui/apps")
	if !strings.Contains(page, `href="/ui/requests/req_0123456789abcdef01234567"`) || !strings.Contains(page, "accessibility tree changed") {
		t.Fatalf("the apps page does not link the review: %s", page)
	}
}
