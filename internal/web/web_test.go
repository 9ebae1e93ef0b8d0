package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/web"
)

// A login link works once: it sets an HttpOnly, SameSite=Strict session cookie for /ui/ (Secure
// only over TLS) and a second use is refused.
func TestLoginLinkOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	link := e.g.LoginLink()
	if !strings.HasPrefix(link, "/ui/login?t=") || len(link) < len("/ui/login?t=")+43 {
		t.Fatalf("login link %q", link)
	}
	resp, _ := b.get(link)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: HTTP %d", resp.StatusCode)
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("login set %d cookies", len(cs))
	}
	c := cs[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" || c.Secure || len(c.Value) < 43 {
		t.Errorf("session cookie %+v", c)
	}
	if resp, _ := b.get("/ui/requests"); resp.StatusCode != http.StatusOK {
		t.Errorf("signed in: /ui/requests HTTP %d", resp.StatusCode)
	}
	other := newBrowser(t, e.srv.URL, e.srv.Client())
	if resp, body := other.get(link); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(body, "capgate serve") {
		t.Errorf("second use of a link: HTTP %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := other.get("/ui/login?t=" + strings.Repeat("A", 43)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a made-up link: HTTP %d", resp.StatusCode)
	}

	// Over TLS the cookie is Secure.
	tls := httptest.NewTLSServer(e.g.Handler())
	defer tls.Close()
	tb := newBrowser(t, tls.URL, tls.Client())
	resp, _ = tb.get(e.g.LoginLink())
	if cs := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
		t.Errorf("login over TLS: HTTP %d cookies %+v", resp.StatusCode, cs)
	}
}

// clock is a settable time for the login and session limits.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A link older than LoginTTL is refused; a session idle for SessionIdle ends, one in use does
// not.
func TestLoginAndSessionExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	clk := &clock{t: time.Now()}
	s := web.New(web.Options{Consent: e.g.Consent, Now: clk.now})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	old := s.LoginLink()
	clk.add(web.LoginTTL)
	b := newBrowser(t, srv.URL, srv.Client())
	if resp, _ := b.get(old); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired link: HTTP %d", resp.StatusCode)
	}
	fresh := s.LoginLink()
	clk.add(web.LoginTTL - time.Second)
	b.login(fresh)
	clk.add(web.SessionIdle - time.Second)
	if resp, _ := b.get("/ui/requests.json"); resp.StatusCode != http.StatusOK {
		t.Errorf("session used within its idle time: HTTP %d", resp.StatusCode)
	}
	clk.add(web.SessionIdle - time.Second)
	if resp, _ := b.get("/ui/requests.json"); resp.StatusCode != http.StatusOK {
		t.Errorf("session kept in use: HTTP %d", resp.StatusCode)
	}
	clk.add(web.SessionIdle)
	if resp, _ := b.get("/ui/requests.json"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("idle session: HTTP %d", resp.StatusCode)
	}
}

// Without a session every page but the login answers 401 with a plain page saying how to sign
// in, and nothing is answered.
func TestNoSessionIs401(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	alice := e.addClient("alice")
	done := e.callAsync(alice, "write", `{"id":"1","text":"milk"}`, "")
	id := e.waitPending(consent.KindCall)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	for _, path := range []string{"/ui/", "/ui/requests", "/ui/requests.json", "/ui/requests/" + id, "/ui/nothing"} {
		resp, body := b.get(path)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "capgate serve") || strings.Contains(body, id) {
			t.Errorf("GET %s without a session: HTTP %d", path, resp.StatusCode)
		}
	}
	u, _ := url.Parse(e.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "capgate_session", Value: strings.Repeat("x", 43), Path: "/ui/"}})
	if resp, _ := b.get("/ui/requests"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a made-up session: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.post("/ui/requests/"+id+"/approve", url.Values{"csrf": {"x"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST approve without a session: HTTP %d", resp.StatusCode)
	}
	if st := e.state(id); st != store.ConsentPending {
		t.Fatalf("the request is %s after unauthenticated posts", st)
	}
	if err := e.g.Consent.Deny(e.ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	<-done
}

// Every answer carries the strict headers: the pages, the JSON, the static files and the 401.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"Cache-Control":          "no-store",
	}
	check := func(path string) {
		resp, _ := b.get(path)
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", path, k, got, v)
			}
		}
	}
	check("/ui/requests")
	check("/ui/login?t=nope")
	b.login(e.g.LoginLink())
	for _, p := range []string{"/ui/", "/ui/requests", "/ui/requests.json", "/ui/static/app.css", "/ui/static/app.js", "/ui/requests/req_000000000000000000000000"} {
		check(p)
	}
	if resp, _ := b.get("/ui/static/app.js"); resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("app.js: Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

// A POST without the session's CSRF token, with a wrong one, or from another origin is
// refused and answers nothing; the right one answers.
func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	alice := e.addClient("alice")
	done := e.callAsync(alice, "write", `{"id":"1","text":"milk"}`, "")
	id := e.waitPending(consent.KindCall)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	other := newBrowser(t, e.srv.URL, e.srv.Client())
	otherCSRF := other.login(e.g.LoginLink())
	if otherCSRF == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	path := "/ui/requests/" + id + "/approve"
	for _, c := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{}, nil},
		{"empty token", url.Values{"csrf": {""}}, nil},
		{"wrong token", url.Values{"csrf": {csrf[:len(csrf)-1] + "x"}}, nil},
		{"another session's token", url.Values{"csrf": {otherCSRF}}, nil},
		{"token in the query", url.Values{}, map[string]string{"X-Query": csrf}},
		{"cross-origin Origin", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
		{"cross-site fetch", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site but another origin", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		p := path
		if c.header["X-Query"] != "" {
			p += "?csrf=" + url.QueryEscape(c.header["X-Query"])
		}
		resp, _ := b.post(p, c.form, c.header)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: HTTP %d, want 403", c.name, resp.StatusCode)
		}
		if st := e.state(id); st != store.ConsentPending {
			t.Fatalf("%s: the request is %s", c.name, st)
		}
	}
	if resp, _ := b.get(path); resp.StatusCode < 400 || e.state(id) != store.ConsentPending {
		t.Errorf("GET approve: HTTP %d", resp.StatusCode)
	}
	b.answer(id, "approve", csrf, nil)
	if r := <-done; r.Body.Status != "success" {
		t.Fatalf("the approved call: %+v", r.Body)
	}
}

// Approve, deny and cancel on the page answer the consent request the call waits on: an
// approved call runs, a denied one does not, a cancelled delayed commit does not; the
// request's page then shows its state. Approving with remember records the agreement.
func TestAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 20*time.Second)
	alice := e.addClient("alice")
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())

	done := e.callAsync(alice, "write", `{"id":"1","text":"milk"}`, "")
	id := e.waitPending(consent.KindCall)
	_, list := b.get("/ui/requests")
	if !strings.Contains(list, `id="r-`+id+`"`) || !strings.Contains(list, "notes.org.example.pad.write") {
		t.Fatalf("the pending request is not listed")
	}
	b.answer(id, "approve", csrf, nil)
	if r := <-done; r.Body.Status != "success" || e.app.note("1") != "milk" {
		t.Fatalf("approved write: %+v", r.Body)
	}
	if _, page := b.get("/ui/requests/" + id); !strings.Contains(page, "state-approved") || strings.Contains(page, `action="/ui/requests/`+id) {
		t.Errorf("an approved request's page shows no state or still offers answers")
	}
	if resp, _ := b.post("/ui/requests/"+id+"/deny", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusConflict {
		t.Errorf("answering an answered request: HTTP %d", resp.StatusCode)
	}

	done = e.callAsync(alice, "write", `{"id":"2","text":"bread"}`, "")
	id2 := e.waitPending(consent.KindCall, id)
	b.answer(id2, "deny", csrf, nil)
	if r := <-done; r.Body.ErrorCode != "CONSENT_DENIED" || e.app.note("2") != "" {
		t.Fatalf("denied write: %+v", r.Body)
	}
	if _, page := b.get("/ui/requests/" + id2); !strings.Contains(page, "denied by person (approval page)") {
		t.Errorf("a denied request's page does not say so")
	}

	// A token for publish, approved on the page; then a publish waits out its delayed
	// commit, and the person cancels it.
	var ans struct {
		Token     string `json:"token"`
		ErrorCode string `json:"error_code"`
	}
	tokDone := make(chan int, 1)
	go func() {
		tokDone <- e.api(alice, "/v1/capabilities/request", map[string]any{"capabilities": []string{"app.pad.publish"}, "duration": 600, "reason": "publish"}, &ans)
	}()
	tid := e.waitPending(consent.KindToken)
	_, page := b.get("/ui/requests/" + tid)
	if !strings.Contains(page, "app.pad.publish") {
		t.Errorf("the token request's page does not name the permission")
	}
	b.answer(tid, "approve", csrf, nil)
	if st := <-tokDone; st != http.StatusOK || ans.Token == "" {
		t.Fatalf("approved token request: HTTP %d %+v", st, ans)
	}
	done = e.callAsync(alice, "publish", `{"id":"1"}`, ans.Token)
	cid := e.waitPending(consent.KindCommit)
	_, page = b.get("/ui/requests")
	if !strings.Contains(page, `data-window="`) || !strings.Contains(page, "/ui/requests/"+cid+"/cancel") || strings.Contains(page, "/ui/requests/"+cid+"/approve") {
		t.Errorf("a delayed commit is not shown with its countdown and cancel button only")
	}
	if resp, _ := b.post("/ui/requests/"+cid+"/approve", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("approving a delayed commit by hand: HTTP %d", resp.StatusCode)
	}
	b.answer(cid, "cancel", csrf, nil)
	if r := <-done; r.Body.ErrorCode != "CONSENT_DENIED" || e.app.count("publish") != 0 {
		t.Fatalf("cancelled publish: %+v, ran %d times", r.Body, e.app.count("publish"))
	}

	// remember: shown with the wording, and recorded as the act_if_agreed mandate.
	c, err := e.g.Consent.Ask(e.ctx, consent.Request{ClientID: "cl_x", ClientName: "alice", Kind: consent.KindCall,
		Permission: "app.pad.write", Summary: "Write a note", Wording: "Write shopping notes whenever asked"})
	if err != nil {
		t.Fatal(err)
	}
	_, page = b.get("/ui/requests/" + c.ID)
	if !strings.Contains(page, `name="remember"`) || !strings.Contains(page, "Write shopping notes whenever asked") {
		t.Errorf("the remember checkbox or its wording is missing")
	}
	b.answer(c.ID, "approve", csrf, url.Values{"remember": {"true"}})
	m, err := e.g.Store.GetMandate(e.ctx, "app.pad.write")
	if err != nil || m.Autonomy != consent.AutonomyActIfAgreed || m.AgreedID != c.ID || m.Wording != "Write shopping notes whenever asked" {
		t.Fatalf("the remembered agreement: %+v %v", m, err)
	}
	if _, page := b.get("/ui/requests/" + id); strings.Contains(page, `name="remember"`) {
		t.Errorf("a request without wording offers to remember")
	}

	for _, p := range []string{"/ui/requests/req_000000000000000000000000", "/ui/requests/nonsense"} {
		if resp, _ := b.get(p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: HTTP %d", p, resp.StatusCode)
		}
	}
	if resp, _ := b.post("/ui/requests/req_000000000000000000000000/approve", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("approving no request: HTTP %d", resp.StatusCode)
	}

	// Every answer is in the audit log by the person, its decision before its outcome; the
	// answer to an answered request is recorded as refused; no record for no request.
	var got []string
	for _, r := range e.auditActions("consent.approve", "consent.deny", "consent.cancel") {
		if r.ClientID != "person (approval page)" {
			t.Errorf("%s names %q", r.Action, r.ClientID)
		}
		got = append(got, strings.Join([]string{r.Action, r.Kind, r.Result, r.Code, r.ConsentID}, "|"))
	}
	want := []string{
		"consent.approve|decision|approve requested||" + id, "consent.approve|outcome|success||" + id,
		"consent.deny|decision|deny requested||" + id, "consent.deny|outcome|error|INVALID_REQUEST|" + id,
		"consent.deny|decision|deny requested||" + id2, "consent.deny|outcome|success||" + id2,
		"consent.approve|decision|approve requested||" + tid, "consent.approve|outcome|success||" + tid,
		"consent.approve|decision|approve requested||" + cid, "consent.approve|outcome|error|INVALID_REQUEST|" + cid,
		"consent.cancel|decision|cancel requested||" + cid, "consent.cancel|outcome|success||" + cid,
		"consent.approve|decision|approve requested||" + c.ID, "consent.approve|outcome|success||" + c.ID,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("answer records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An approval whose audit record cannot be written is not given, and the page says so; a
// denial, which only stops something, is given all the same.
func TestUnrecordedApprovalIsNotGiven(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b, csrf, same := e.unrecordedPage()
	ask := func() string {
		c, err := e.g.Consent.Ask(e.ctx, consent.Request{ClientID: "cl_x", ClientName: "alice", Kind: consent.KindCall,
			Permission: "app.pad.write", Summary: "Write a note"})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	id := ask()
	resp, body := b.post("/ui/requests/"+id+"/approve", url.Values{"csrf": {csrf}}, same)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "did not give it") {
		t.Errorf("an unrecorded approval: HTTP %d %s", resp.StatusCode, body)
	}
	if st := e.state(id); st != store.ConsentPending {
		t.Errorf("the unrecorded approval was given: %s", st)
	}
	id = ask()
	if resp, _ := b.post("/ui/requests/"+id+"/deny", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("an unrecorded denial: HTTP %d", resp.StatusCode)
	}
	if st := e.state(id); st != store.ConsentDenied {
		t.Errorf("the unrecorded denial was not given: %s", st)
	}
}

// Hostile client names, summaries (a capability's name) and params are text on the page and
// in the JSON: escaped, never markup; hidden characters are shown as escapes; a URL's host is
// highlighted, a look-alike one flagged, and no URL is a link.
func TestHostileStringsAreText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	evil := e.addClient(`<script>alert(1)</script>"><img src=x onerror=alert(1)>`)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	params := `{"to":"<script>alert(1)</script>","html":"\"><img src=x onerror=alert(1)>","link":"javascript:alert(1)",` +
		`"file":"\u202egnp.exe","url":"https://аpple.com@evil.example/login?next=<b>","ascii":"https://xn--pple-43d.com/x"}`
	done := e.callAsync(evil, "send", params, "")
	id := e.waitPending(consent.KindCall)

	_, page := b.get("/ui/requests")
	_, one := b.get("/ui/requests/" + id)
	_, js := b.get("/ui/requests.json")
	for name, body := range map[string]string{"list": page, "request page": one} {
		for _, bad := range []string{"<script>alert", "<script>window", "<img", "\u202e", `href="javascript`, `href="https://`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q unescaped", name, bad)
			}
		}
		for _, good := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;", `\u202egnp.exe`,
			"<mark>evil.example</mark>", "look-alike characters", "<mark>xn--pple-43d.com</mark>", "javascript:alert(1)"} {
			if !strings.Contains(body, good) {
				t.Errorf("%s lacks %q", name, good)
			}
		}
		if strings.Count(body, "<script") != 1 {
			t.Errorf("%s has %d script elements, want only app.js", name, strings.Count(body, "<script"))
		}
	}
	for _, bad := range []string{"<script", "<img", "\u202e"} {
		if strings.Contains(js, bad) {
			t.Errorf("requests.json holds %q unescaped", bad)
		}
	}
	if !strings.Contains(js, `\u003cscript\u003e`) {
		t.Errorf("requests.json does not escape markup")
	}
	if err := e.g.Consent.Deny(e.ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	<-done
}

// The page's countdown of a delayed commit takes its window's end as the request's expiry
// minus consent's grace: a commit request must expire exactly that long after its window.
func TestCommitGraceMatchesConsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	const window = 20 * time.Millisecond
	id, err := e.g.Consent.Commit(context.Background(), consent.Request{ClientID: "cl_x", Permission: "app.pad.publish"}, window)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.g.Store.GetConsent(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Expires.Sub(c.Created) - window; got != web.CommitGrace {
		t.Fatalf("a commit request expires %v after its window; the page counts down with %v", got, web.CommitGrace)
	}
}
