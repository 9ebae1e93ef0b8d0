package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/capgate/capgate/internal/consent"
)

// chromium finds the headless browser: /usr/bin/chromium (Debian's package), else chromium
// or chromium-browser on PATH. Without one the browser tests skip, except in CI (CI=true),
// where a missing part is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary (install Debian's chromium package: apt-get install -y chromium)")
	}
	t.Skip("no chromium binary: install Debian's chromium package (apt-get install -y chromium) to run the browser tests")
	return ""
}

// newChrome starts headless chromium for one test and returns its context (bounded by
// timeout) and do, which runs steps or fails the test naming what.
func newChrome(t *testing.T, timeout time.Duration) (context.Context, func(what string, steps ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(820, 1100))
	actx, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(stopAlloc)
	bctx, stopBrowser := chromedp.NewContext(actx)
	t.Cleanup(stopBrowser)
	ctx, stop := context.WithTimeout(bctx, timeout)
	t.Cleanup(stop)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return ctx, do
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// screenshotDir is where the browser tests save pictures of the pages: with
// CAPGATE_SCREENSHOTS=1, docs/ (the README's figures); with any other value, that folder;
// unset, nowhere, so that no ordinary run rewrites docs/.
func screenshotDir() string {
	switch d := os.Getenv("CAPGATE_SCREENSHOTS"); d {
	case "":
		return ""
	case "1":
		return filepath.Join("..", "..", "docs")
	default:
		return d
	}
}

// saveScreenshot saves the page the browser shows as name in screenshotDir, when set: the
// whole page, or with window set what the window shows (a long page's top).
func saveScreenshot(t *testing.T, ctx context.Context, name string, window bool) {
	t.Helper()
	dir := screenshotDir()
	if dir == "" {
		return
	}
	shot := chromedp.FullScreenshot(100)
	if window {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// The approval page in a real browser: sign in through the one-time link, see a request
// arrive while the page is open, approve it and watch the waiting call complete, deny
// another, find no injected element when an agent sends hostile strings, and revoke a token
// and see it and its derived token leave the tokens page. With CAPGATE_SCREENSHOTS set it
// saves the pending page as ui-requests.png (screenshotDir).
func TestBrowser(t *testing.T) {
	ctx, do := newChrome(t, 90*time.Second)
	e := newEnv(t, 0)
	alice := e.addClient("Research assistant")

	do("log in", chromedp.Navigate(e.srv.URL+e.g.LoginLink()), chromedp.WaitVisible(css("#empty")))
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != e.srv.URL+"/ui/" {
		t.Fatalf("after the login link the browser is at %s (%v)", loc, err)
	}

	// A request arrives while the page is open; approving it completes the waiting call.
	done := e.callAsync(alice, "write", `{"id":"1","text":"milk"}`, "")
	id := e.waitPending(consent.KindCall)
	card := "#r-" + id
	do("see the request arrive", chromedp.WaitVisible(css(card+" button.approve")))
	if client, err := chromedp.Run(ctx, chromedp.TextContent(css(card+" .client"))); err != nil || client != "Research assistant" {
		t.Errorf("the card names %q (%v)", client, err)
	}
	do("approve", chromedp.Click(css(card+" button.approve")), chromedp.WaitVisible(css(".state-approved")))
	if r := <-done; r.Body.Status != "success" || e.app.note("1") != "milk" {
		t.Fatalf("the approved call: %+v", r.Body)
	}

	// Deny another.
	do("back to the list", chromedp.Navigate(e.srv.URL+"/ui/requests"), chromedp.WaitVisible(css("#empty")))
	done = e.callAsync(alice, "write", `{"id":"2","text":"bread"}`, "")
	id2 := e.waitPending(consent.KindCall, id)
	do("deny", chromedp.WaitVisible(css("#r-"+id2+" button.deny")), chromedp.Click(css("#r-"+id2+" button.deny")),
		chromedp.WaitVisible(css(".state-denied")))
	if r := <-done; r.Body.ErrorCode != "CONSENT_DENIED" || e.app.note("2") != "" {
		t.Fatalf("the denied call: %+v", r.Body)
	}

	// Hostile strings, arriving while the page is open (built by the script) and after a
	// reload (rendered by the server): no element is injected, nothing runs, the text is shown
	// as sent.
	evilName := `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=1">`
	evil := e.addClient(evilName)
	do("back to the list", chromedp.Navigate(e.srv.URL+"/ui/requests"), chromedp.WaitVisible(css("#empty")))
	done = e.callAsync(evil, "send", `{"to":"<script>window.__pwned=1</script>","html":"\"><img src=x onerror=\"window.__pwned=1\">",`+
		`"link":"javascript:window.__pwned=1","file":"\u202egnp.exe","url":"https://аpple.com/login"}`, "")
	id3 := e.waitPending(consent.KindCall, id, id2)
	type dom struct {
		Imgs, Scripts, Links, Marks, Flags int
		Pwned                              bool
		Client, Summary                    string
	}
	for _, how := range []string{"arrived", "reloaded"} {
		if how == "reloaded" {
			do("reload", chromedp.Reload())
		}
		do("see the hostile request "+how, chromedp.WaitVisible(css("#r-"+id3+" button.deny")))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[dom](`({
			Imgs: document.querySelectorAll('img, [onerror]').length,
			Scripts: document.querySelectorAll('script').length,
			Links: document.querySelectorAll('a[href^="javascript"], a[href^="https"]').length,
			Marks: document.querySelectorAll('#r-`+id3+` .urls mark').length,
			Flags: [...document.querySelectorAll('#r-`+id3+` .flag')].filter(e => e.textContent === 'look-alike characters').length,
			Pwned: window.__pwned !== undefined,
			Client: document.querySelector('#r-`+id3+` .client').textContent,
			Summary: document.querySelector('#r-`+id3+` .summary').textContent,
		})`))
		if err != nil {
			t.Fatalf("query the DOM: %v", err)
		}
		if got.Imgs != 0 || got.Scripts != 1 || got.Links != 0 || got.Pwned {
			t.Errorf("%s: injected elements or script ran: %+v", how, got)
		}
		if got.Client != evilName || got.Summary != hostileName || got.Marks != 1 || got.Flags != 1 {
			t.Errorf("%s: the hostile text is not shown as sent, or the look-alike host not flagged: %+v", how, got)
		}
	}
	do("deny the hostile request", chromedp.Click(css("#r-"+id3+" button.deny")), chromedp.WaitVisible(css(".state-denied")))
	<-done

	// Revoke a token on the tokens page: it and the token derived from it leave the list, the
	// other stays; the hostile audit tag injected nothing.
	ts := e.tokens("Token holder")
	do("open the tokens page", chromedp.Navigate(e.srv.URL+"/ui/tokens"), chromedp.WaitVisible(css("#t-"+ts.parent.ID+" button.revoke")))
	do("revoke", chromedp.Click(css("#t-"+ts.parent.ID+" button.revoke")), chromedp.WaitNotPresent(css("#t-"+ts.parent.ID)),
		chromedp.WaitNotPresent(css("#t-"+ts.child.ID)), chromedp.WaitVisible(css("#t-"+ts.other.ID)))
	type left struct {
		Parent, Child, Other, Injected int
		Path                           string
	}
	after, err := chromedp.Run(ctx, chromedp.Evaluate[left](`({
		Parent: document.querySelectorAll('#t-`+ts.parent.ID+`').length,
		Child: document.querySelectorAll('#t-`+ts.child.ID+`').length,
		Other: document.querySelectorAll('#t-`+ts.other.ID+`').length,
		Injected: document.querySelectorAll('img, [onerror]').length + (window.__pwned !== undefined ? 1 : 0),
		Path: location.pathname,
	})`))
	if err != nil || after.Parent != 0 || after.Child != 0 || after.Other != 1 || after.Injected != 0 || after.Path != "/ui/tokens" {
		t.Errorf("after revoking on the tokens page: %+v (%v)", after, err)
	}

	if screenshotDir() != "" {
		screenshot(t, e, ctx, alice)
	}
}

// screenshot saves the pending page with a token request and a call as ui-requests.png.
func screenshot(t *testing.T, e *env, ctx context.Context, alice string) {
	var ans struct{ Token string }
	tokDone := make(chan int, 1)
	go func() {
		tokDone <- e.api(alice, "/v1/capabilities/request", map[string]any{"capabilities": []string{"fs.write"}, "duration": 7 * 24 * 3600,
			"max_uses": 50, "reason": "Tidy this week's meeting notes", "constraints": map[string]any{"allowed_paths": []string{"/home/ada/notes/**"},
				"condition": `!params.path.endsWith(".key")`}}, &ans)
	}()
	tid := e.waitPending(consent.KindToken)
	done := e.callAsync(alice, "write", `{"id":"minutes","text":"Minutes of Monday: see https://exаmple.com/notes"}`, "")
	cid := e.waitPending(consent.KindCall, tid)
	err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/ui/requests"), chromedp.WaitVisible(chromedp.CSS("#r-"+cid)),
		chromedp.WaitVisible(chromedp.CSS("#r-"+tid)), chromedp.Sleep(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, ctx, "ui-requests.png", false)
	for _, id := range []string{tid, cid} {
		if err := e.g.Consent.Deny(e.ctx, id, "test"); err != nil {
			t.Error(err)
		}
	}
	<-done
	<-tokDone
}
