package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// hostileTag is an audit tag (a token's reason) that must stay text.
const hostileTag = `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=1">`

// tokens issues, through the broker, a parent token for app.pad.write (the person approves
// it), a child derived from it and an unrelated second root token, all for the client
// named name; and puts a fourth token straight into the store with a body and a made-up
// hash, to check what the page shows of a body and that it never shows a hash.
type tokenSet struct {
	clientID, key                 string
	parent, child, other          broker.Issued
	stored, storedHash, storedTag string
}

func (e *env) tokens(name string) tokenSet {
	e.t.Helper()
	key := e.addClient(name)
	c, err := e.g.Store.ClientByName(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	ts := tokenSet{clientID: c.ID, key: key}
	caller := broker.Caller{ClientID: c.ID, Name: name, Trust: manifest.AuthUser}
	approve := func(id string) {
		go func() {
			if err := e.g.Consent.Approve(e.ctx, id, "test", false); err != nil {
				e.t.Errorf("approve %s: %v", id, err)
			}
		}()
	}
	issue := func(reason string) broker.Issued {
		is, err := e.g.Broker.RequestCapability(e.ctx, caller, broker.CapabilityRequest{Capabilities: []string{"app.pad.write"},
			Duration: 600, MaxUses: 5, Reason: reason, OnConsent: approve})
		if err != nil {
			e.t.Fatal(err)
		}
		return is
	}
	ts.parent = issue(hostileTag)
	ts.child, err = e.g.Broker.Derive(e.ctx, caller, broker.DeriveRequest{Parent: ts.parent.Wire, Capabilities: []string{"app.pad.write"},
		MaxUses: 2, Reason: "one step"})
	if err != nil {
		e.t.Fatal(err)
	}
	ts.other = issue("another job")
	ts.stored, ts.storedHash, ts.storedTag = token.NewID(), "sha256:"+strings.Repeat("ab", 32), "tidy the \u202edownloads"
	now := time.Now()
	if err := e.g.Store.PutToken(e.ctx, store.Token{ID: ts.stored, ClientID: c.ID, Hash: ts.storedHash, IssuedAt: now,
		ExpiresAt: now.Add(24*time.Hour + 30*time.Second), AuditTag: ts.storedTag,
		Body: []byte(`{"audit_tag":"x","capabilities":["fs.read","fs.write"],"constraints":{"allowed_paths":["/home/a/**"],` +
			`"condition":"params.size < 10 && \"<b>\" != \"\""},"token_id":"` + ts.stored + `"}`)}); err != nil {
		e.t.Fatal(err)
	}
	return ts
}

// The tokens page lists the live tokens with client, scopes, constraints, uses left, expiry
// and parent, as text, never a wire form or a hash; revoking the parent (with the session's
// CSRF token, from the page's origin) takes it and its child off the list and leaves the
// others; a revoke without the token, with a wrong one or from another origin revokes
// nothing.
func TestTokensRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	ts := e.tokens("alice <b>")
	b := newBrowser(t, e.srv.URL, e.srv.Client())

	if resp, body := b.get("/ui/tokens"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, ts.parent.ID) {
		t.Errorf("tokens without a session: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.post("/ui/tokens/"+ts.parent.ID+"/revoke", url.Values{"csrf": {"x"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoke without a session: HTTP %d", resp.StatusCode)
	}
	csrf := b.login(e.g.LoginLink())
	resp, page := b.get("/ui/tokens")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tokens: HTTP %d", resp.StatusCode)
	}
	for _, id := range []string{ts.parent.ID, ts.child.ID, ts.other.ID, ts.stored} {
		if !strings.Contains(page, `id="t-`+id+`"`) {
			t.Errorf("live token %s is not listed", id)
		}
	}
	for _, bad := range []string{ts.parent.Wire, ts.child.Wire, ts.other.Wire, ts.storedHash, token.WireHash(ts.parent.Wire), "<script>window", "<img", "\u202e", "<b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the tokens page holds %q", bad)
		}
	}
	// The child is right under its parent, indented and labelled.
	pi, ci := strings.Index(page, `id="t-`+ts.parent.ID+`"`), strings.Index(page, `id="t-`+ts.child.ID+`"`)
	if pi < 0 || ci < pi || !strings.Contains(page, `token depth-1" id="t-`+ts.child.ID) ||
		!strings.Contains(page, `derived from <a href="#t-`+ts.parent.ID+`"`) {
		t.Errorf("the derived token is not shown under its parent")
	}
	for _, want := range []string{
		"alice &lt;b&gt;", "&lt;script&gt;window.__pwned=1&lt;/script&gt;", // client name and the hostile audit tag, as text
		"5 of 5", "2 of 2", "no limit", // uses left
		"fs.read, fs.write", "only these paths: /home/a/**; only when this CEL condition holds: params.size &lt; 10 &amp;&amp; &#34;&lt;b&gt;&#34; != &#34;&#34;",
		"at most 5 uses", "at most 2 uses", // a token's uses, as a token request says them
		`tidy the \u202edownloads`,
		"in 1 day (",    // a day left, said as a day and the date, never "1440 min 29 s"
		"app.pad.write", // the scopes of a token the broker issued, from the body it stores
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the tokens page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("the tokens page has %d script elements, want only app.js", n)
	}
	if m := regexp.MustCompile(`\d{3,} min`).FindString(page); m != "" {
		t.Errorf("the tokens page says a long time in minutes: %q", m)
	}

	path := "/ui/tokens/" + ts.parent.ID + "/revoke"
	for _, c := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{}, nil},
		{"wrong token", url.Values{"csrf": {csrf[:len(csrf)-1] + "x"}}, nil},
		{"cross-origin", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
		{"cross-site fetch", url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		if resp, _ := b.post(path, c.form, c.header); resp.StatusCode != http.StatusForbidden {
			t.Errorf("revoke, %s: HTTP %d, want 403", c.name, resp.StatusCode)
		}
	}
	if resp, _ := b.get(path); resp.StatusCode < 400 {
		t.Errorf("GET revoke: HTTP %d", resp.StatusCode)
	}
	if live := e.liveTokens(); !live[ts.parent.ID] || !live[ts.child.ID] {
		t.Fatalf("refused revokes revoked something: live %v", live)
	}

	resp, body := b.post(path, url.Values{"csrf": {csrf}}, map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/tokens" {
		t.Fatalf("revoke: HTTP %d %s", resp.StatusCode, body)
	}
	live := e.liveTokens()
	if live[ts.parent.ID] || live[ts.child.ID] || !live[ts.other.ID] || !live[ts.stored] {
		t.Errorf("after revoking the parent, live tokens are %v", live)
	}
	if st, err := e.g.Store.GetToken(e.ctx, ts.child.ID); err != nil || !st.Revoked {
		t.Errorf("the child is not revoked: %+v %v", st, err)
	}
	_, page = b.get("/ui/tokens")
	if strings.Contains(page, `id="t-`+ts.parent.ID+`"`) || strings.Contains(page, `id="t-`+ts.child.ID+`"`) || !strings.Contains(page, `id="t-`+ts.other.ID+`"`) {
		t.Errorf("after revoking, the page still lists the parent or the child, or lost the other token")
	}
	// The broker refuses the revoked tokens at once (its cache was dropped).
	if r := <-e.callAsync(ts.key, "write", `{"id":"1","text":"x"}`, ts.child.Wire); r.Body.Status == "success" || e.app.note("1") != "" {
		t.Errorf("a call with the revoked child token ran: %+v", r.Body)
	} else {
		t.Logf("revoked child: %s %s", r.Body.ErrorCode, r.Body.ErrorMessage)
	}
	if r := <-e.callAsync(ts.key, "write", `{"id":"2","text":"y"}`, ts.other.Wire); r.Body.Status != "success" || e.app.note("2") != "y" {
		t.Errorf("a call with the live token did not run: %+v", r.Body)
	}
	if resp, _ := b.post("/ui/tokens/tok_nonexistent/revoke", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("revoking an unknown token: HTTP %d", resp.StatusCode)
	}
}

// liveTokens is the set of live token ids in the store now.
func (e *env) liveTokens() map[string]bool {
	e.t.Helper()
	ts, err := e.g.Store.ListTokens(e.ctx, true, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	m := map[string]bool{}
	for _, t := range ts {
		m[t.ID] = true
	}
	return m
}
