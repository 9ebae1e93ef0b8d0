package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// The person's changes in a real browser, each checked in the app's state and then found in
// the activity view: cancel a delayed commit and watch the waiting call end cancelled; undo
// a call from the activity page and see the note restored; revoke a token and see its next
// call refused; accept a tool server's changed tool (and a hostile new one) on the apps page
// and see it run again. Hostile tool names, titles, descriptions and plugin names on the
// apps page inject nothing. The apps and activity pages fit a narrow window. With
// CAPGATE_SCREENSHOTS set it saves ui-apps.png, ui-tokens.png and ui-activity.png.
func TestBrowserActions(t *testing.T) {
	ctx, do := newChrome(t, 180*time.Second)
	// echo is classified read, low risk and reversible by the operator, so that calling it
	// needs no answer from the person; publish (irreversible) waits out 20 s.
	e, control := toolEnvWith(t, 20*time.Second, map[string]toolserver.Class{
		"echo": {SideEffects: manifest.SideEffectRead, Risk: manifest.RiskLow, Reversibility: manifest.Reversible}})
	e.installPlugin("org.example.kb", hostileCapName, hostileSource, false)
	e.installPlugin("org.example.wiki", "Search the wiki", "wiki-1.0.0", true)
	alice := e.addClient("Research assistant")
	cl, err := e.g.Store.ClientByName(e.ctx, "Research assistant")
	if err != nil {
		t.Fatal(err)
	}
	do("log in", chromedp.Navigate(e.srv.URL+e.g.LoginLink()), chromedp.WaitVisible(css("#empty")))

	// Cancel a delayed commit: the publish waiting out its window ends cancelled, unrun.
	var tok struct{ Token string }
	tokDone := make(chan int, 1)
	go func() {
		tokDone <- e.api(alice, "/v1/capabilities/request", map[string]any{"capabilities": []string{"app.pad.publish"}, "duration": 600, "reason": "publish the minutes"}, &tok)
	}()
	if err := e.g.Consent.Approve(e.ctx, e.waitPending(consent.KindToken), "test", false); err != nil {
		t.Fatal(err)
	}
	if st := <-tokDone; st != 200 || tok.Token == "" {
		t.Fatalf("the publish token: HTTP %d", st)
	}
	published := e.callAsync(alice, "publish", `{"id":"minutes"}`, tok.Token)
	commit := e.waitPending(consent.KindCommit)
	do("see the delayed commit", chromedp.WaitVisible(css("#r-"+commit+" button.cancel")))
	do("cancel it", chromedp.Click(css("#r-"+commit+" button.cancel")), chromedp.WaitVisible(css(".state-cancelled")))
	if r := <-published; r.Body.ErrorCode != "CONSENT_DENIED" || e.app.count("publish") != 0 {
		t.Fatalf("the cancelled publish: %+v, ran %d times", r.Body, e.app.count("publish"))
	}

	// Undo a call from the activity page: the note is as it was before.
	e.approvedWrite(alice, "minutes", "Monday: budget agreed")
	do("open the activity page", chromedp.Navigate(e.srv.URL+"/ui/activity"), chromedp.WaitVisible(css("button.undo-call")))
	do("undo", chromedp.Click(css("button.undo-call")), chromedp.WaitNotPresent(css("button.undo-call")))
	if e.app.note("minutes") != "" || e.app.count("undo") != 1 {
		t.Fatalf("after the undo the note is %q (%d undos)", e.app.note("minutes"), e.app.count("undo"))
	}

	// Revoke a token: its next call is refused.
	ts := e.tokens("Token holder")
	if r := <-e.callAsync(ts.key, "write", `{"id":"todo","text":"call Bob"}`, ts.other.Wire); r.Body.Status != "success" {
		t.Fatalf("a call under the token before the revoke: %+v", r.Body)
	}
	do("open the tokens page", chromedp.Navigate(e.srv.URL+"/ui/tokens"), chromedp.WaitVisible(css("#t-"+ts.other.ID+" button.revoke")))
	saveScreenshot(t, ctx, "ui-tokens.png", false)
	do("revoke", chromedp.Click(css("#t-"+ts.other.ID+" button.revoke")), chromedp.WaitNotPresent(css("#t-"+ts.other.ID)))
	if r := <-e.callAsync(ts.key, "write", `{"id":"todo","text":"call Eve"}`, ts.other.Wire); r.Body.ErrorCode != "INVALID_TOKEN" || e.app.note("todo") != "call Bob" {
		t.Fatalf("a call under the revoked token: %+v", r.Body)
	}

	// Accept a changed tool on the apps page: stopped while changed, running once accepted.
	iss, err := e.g.Broker.RequestCapability(e.ctx, broker.Caller{ClientID: cl.ID, Name: cl.Name, Trust: manifest.AuthUser},
		broker.CapabilityRequest{Capabilities: []string{"mcp.srv.echo"}, Duration: 600, Reason: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(text string) ipc.Response {
		return <-e.callAppAsync(alice, "srv", "echo", `{"text":"`+text+`"}`, iss.Wire)
	}
	if r := echo("hi"); r.Body.Status != "success" {
		t.Fatalf("echo before the change: %+v", r.Body)
	}
	setControl(t, control, "mutate,hostile")
	rs := e.pinRequests(2)
	echoReq, evilReq := request(t, rs, "echo"), request(t, rs, hostileTool)
	eventually(t, "echo is stopped", func() bool { return !e.g.Registry.Pinned("tool.mcp.srv.echo") })
	if r := echo("hi"); r.Body.ErrorCode != "METHOD_NOT_FOUND" {
		t.Fatalf("echo while changed: %+v", r.Body)
	}
	do("open the apps page", chromedp.Navigate(e.srv.URL+"/ui/apps"), chromedp.WaitVisible(css("#pin-"+echoReq.ConsentID+" button.accept")))
	checkAppsPage(t, ctx, evilReq.ConsentID, false)
	saveScreenshot(t, ctx, "ui-apps.png", false)
	narrow(t, ctx, do, "/ui/apps")
	do("accept echo", chromedp.Click(css("#pin-"+echoReq.ConsentID+" button.accept")),
		chromedp.WaitNotPresent(css("#pin-"+echoReq.ConsentID)), chromedp.WaitVisible(css("#pin-"+evilReq.ConsentID+" button.accept")))
	eventually(t, "echo runs again", func() bool { return echo("again").Body.Status == "success" })
	evilTool := "#tool-srv-t__img_src_x_onerror__window___pwned_1__"
	do("accept the hostile tool", chromedp.Click(css("#pin-"+evilReq.ConsentID+" button.accept")),
		chromedp.WaitNotPresent(css("#pin-"+evilReq.ConsentID)), chromedp.WaitVisible(css(evilTool)))
	eventually(t, "echo and the hostile tool run", func() bool {
		return e.g.Registry.Pinned("tool.mcp.srv.echo") && e.g.Registry.Pinned("tool.mcp.srv.t__img_src_x_onerror__window___pwned_1__")
	})
	do("reload the apps page", chromedp.Reload(), chromedp.WaitVisible(css("#tool-srv-echo .state-running")), chromedp.WaitVisible(css(evilTool+" .state-running")))
	checkAppsPage(t, ctx, "", true)

	// Each change is in the activity view.
	do("open the activity page", chromedp.Navigate(e.srv.URL+"/ui/activity"), chromedp.WaitVisible(css("#verify")))
	entries, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#entries .entry')].map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	find := func(what string, all ...string) {
		t.Helper()
		for _, e := range entries {
			ok := true
			for _, s := range all {
				ok = ok && strings.Contains(e, s)
			}
			if ok {
				return
			}
		}
		t.Errorf("the activity view shows no record of %s (with %q)", what, all)
	}
	find("the cancelled commit", "CONSENT_DENIED", "cancelled the call during its delayed-commit window", "notes.org.example.pad.publish")
	find("the undo", "undo (decision)", "person (approval page)", "notes.org.example.pad.write")
	find("the undo's outcome", "undo (outcome)", "person (approval page)", "success")
	find("the revoke", "token.revoke", ts.other.ID, "person (approval page)")
	find("the refused call", "INVALID_TOKEN", ts.other.ID)
	find("the stopped tool", "toolserver.pin", "tool.mcp.srv.echo", "stopped")
	find("the accept", "toolserver.accept (outcome)", "tool.mcp.srv.echo", "success", echoReq.ConsentID)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('img, [onerror], [onclick]').length + (window.__pwned !== undefined ? 1 : 0)`)); err != nil || got != 0 {
		t.Errorf("the activity page holds injected elements: %d (%v)", got, err)
	}
	saveScreenshot(t, ctx, "ui-activity.png", true)
	narrow(t, ctx, do, "/ui/activity")
}

// checkAppsPage checks the apps page the browser shows: no element injected and nothing run
// by what the tool server and the plugins wrote, and their text shown as sent. evil is the
// hostile tool's pin request while it waits; accepted is set once it is pinned.
func checkAppsPage(t *testing.T, ctx context.Context, evil string, accepted bool) {
	t.Helper()
	type dom struct {
		Injected, Scripts    int
		Pwned                bool
		Tools, Sources, Caps []string
		Diff, Title, Desc    string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[dom](`({
		Injected: document.querySelectorAll('img, [onerror], [onclick], a[href^="javascript"], b').length,
		Scripts: document.querySelectorAll('script').length,
		Pwned: window.__pwned !== undefined,
		Tools: [...document.querySelectorAll('.tool-name')].map(e => e.textContent),
		Sources: [...document.querySelectorAll('.source')].map(e => e.textContent),
		Caps: [...document.querySelectorAll('.cap-name')].map(e => e.textContent),
		Diff: (document.querySelector('#pin-`+evil+` .diff-lines') || {textContent: ''}).textContent,
		Title: [...document.querySelectorAll('.tool-title')].map(e => e.textContent).join('|'),
		Desc: [...document.querySelectorAll('.tool-desc')].map(e => e.textContent).join('|'),
	})`))
	if err != nil {
		t.Fatalf("query the apps page: %v", err)
	}
	if got.Injected != 0 || got.Scripts != 1 || got.Pwned {
		t.Errorf("the apps page holds injected elements or ran script: %+v", got)
	}
	has := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	source := false // the folder the plugin was installed from, its path as given
	for _, x := range got.Sources {
		source = source || strings.HasSuffix(x, "/"+hostileSource)
	}
	if !has(got.Tools, hostileTool) || !source || !has(got.Caps, "("+hostileCapName+")") {
		t.Errorf("the hostile tool name, plugin folder or capability name is not shown as sent: %+v", got)
	}
	// The difference is the JSON as written, shown as text: markup as the server sent it
	// (never HTML-escaped as \u003c), hidden characters as escapes.
	if evil != "" && (!strings.Contains(got.Diff, `+ /title: "\"><script>window.__pwned=1</script>"`) || !strings.Contains(got.Diff, `\u202e`) ||
		strings.Contains(got.Diff, `\u003c`)) {
		t.Errorf("the hostile tool's difference is not shown as text: %q", got.Diff)
	}
	wantDesc := strings.ReplaceAll(hostileDescription, "\u202e", `\u202e`)
	if accepted && (!strings.Contains(got.Title, "("+hostileTitle+")") || !strings.Contains(got.Desc, wantDesc)) {
		t.Errorf("the accepted hostile tool's title or description is not shown as text: %+v", got)
	}
}

// narrow shows path in a phone-sized window and checks that nothing makes the page wider
// than it.
func narrow(t *testing.T, ctx context.Context, do func(string, ...chromedp.Action[chromedp.Void]), path string) {
	t.Helper()
	do("narrow the window", chromedp.EmulateViewport(360, 740), chromedp.Navigate(strings.Split(mustLocation(t, ctx), "/ui/")[0]+path), chromedp.WaitVisible(css("main")))
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`)); err != nil || w > 0 {
		t.Errorf("%s is %d px wider than a narrow window (%v)", path, w, err)
	}
	do("widen the window", chromedp.EmulateViewport(820, 1100), chromedp.Navigate(strings.Split(mustLocation(t, ctx), "/ui/")[0]+path), chromedp.WaitVisible(css("main")))
}

func mustLocation(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
