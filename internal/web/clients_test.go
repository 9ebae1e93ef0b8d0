package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
)

// The clients page lists the clients (name as text, trust, state, live tokens, never a key or
// its hash); disabling one there (with the session's CSRF token, from the page's origin)
// refuses its very next call and its token requests, enabling it lets it call again, and
// removing it revokes its tokens; each change is in the audit log as the person's, before
// and after. A change without the CSRF token, with a wrong one, from another origin, of an
// unknown verb or client changes nothing.
func TestClientsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	ts := e.tokens("alice <b>")
	bobKey := e.addClient("bob\u202e")
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	path := "/ui/clients/" + ts.clientID + "/disable"

	if resp, body := b.get("/ui/clients"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, ts.clientID) {
		t.Errorf("clients without a session: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.post(path, url.Values{"csrf": {"x"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("disable without a session: HTTP %d", resp.StatusCode)
	}
	csrf := b.login(e.g.LoginLink())
	resp, page := b.get("/ui/clients")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("clients: HTTP %d", resp.StatusCode)
	}
	for _, want := range []string{`id="c-` + ts.clientID + `"`, "alice &lt;b&gt;", `bob\u202e`, `action="/ui/clients/` + ts.clientID + `/disable"`,
		`action="/ui/clients/` + ts.clientID + `/remove"`, `<dd class="live">4</dd>`, `<dd class="live">0</dd>`,
		`href="/ui/clients" aria-current="page"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the clients page lacks %q", want)
		}
	}
	for _, bad := range []string{"<b>", "\u202e", ts.key, ipc.KeyHash(ts.key), bobKey, ipc.KeyHash(bobKey)} {
		if strings.Contains(page, bad) {
			t.Errorf("the clients page holds %q", bad)
		}
	}
	if _, tokensPage := b.get("/ui/tokens"); !strings.Contains(tokensPage, `href="/ui/clients"`) {
		t.Error("the other pages do not link the clients page")
	}

	same := map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}
	for _, c := range []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
		status int
	}{
		{"no token", path, url.Values{}, nil, http.StatusForbidden},
		{"wrong token", path, url.Values{"csrf": {csrf[:len(csrf)-1] + "x"}}, nil, http.StatusForbidden},
		{"cross-origin", path, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", path, url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"unknown verb", "/ui/clients/" + ts.clientID + "/delete", url.Values{"csrf": {csrf}}, same, http.StatusNotFound},
		{"unknown client", "/ui/clients/cl_nobody/disable", url.Values{"csrf": {csrf}}, same, http.StatusNotFound},
		{"a long id", "/ui/clients/" + strings.Repeat("c", 300) + "/disable", url.Values{"csrf": {csrf}}, same, http.StatusNotFound},
	} {
		if resp, _ := b.post(c.path, c.form, c.header); resp.StatusCode != c.status {
			t.Errorf("disable, %s: HTTP %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	if resp, _ := b.get(path); resp.StatusCode < 400 {
		t.Errorf("GET disable: HTTP %d", resp.StatusCode)
	}
	write := func(id string) ipc.Response {
		return <-e.callAsync(ts.key, "write", `{"id":"`+id+`","text":"x"}`, ts.other.Wire)
	}
	if r := write("1"); r.Body.Status != "success" {
		t.Fatalf("a call before the disable: %+v", r.Body)
	}

	post := func(verb string) {
		t.Helper()
		resp, body := b.post("/ui/clients/"+ts.clientID+"/"+verb, url.Values{"csrf": {csrf}}, same)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/clients" {
			t.Fatalf("%s: HTTP %d %s", verb, resp.StatusCode, body)
		}
	}
	post("disable")
	if r := write("2"); r.Body.Status == "success" || r.Body.ErrorCode != "PERMISSION_DENIED" || e.app.note("2") != "" {
		t.Errorf("a disabled client's call: %+v", r.Body)
	}
	var tr map[string]any
	if status := e.api(ts.key, "/v1/capabilities/request", map[string]any{"capabilities": []string{"app.pad.write"}, "duration": 60}, &tr); status != http.StatusUnauthorized {
		t.Errorf("a disabled client's token request: HTTP %d %v", status, tr)
	}
	_, page = b.get("/ui/clients")
	if !strings.Contains(page, "state-disabled") || !strings.Contains(page, `action="/ui/clients/`+ts.clientID+`/enable"`) {
		t.Error("the page does not show the client disabled with an enable button")
	}
	post("enable")
	if r := write("3"); r.Body.Status != "success" {
		t.Errorf("an enabled client's call: %+v", r.Body)
	}
	post("remove")
	for _, id := range []string{ts.parent.ID, ts.child.ID, ts.other.ID, ts.stored} {
		if st, err := e.g.Store.GetToken(e.ctx, id); err != nil || !st.Revoked {
			t.Errorf("a removed client's token %s: %+v %v", id, st, err)
		}
	}
	if r := write("4"); r.Body.Status == "success" || e.app.note("4") != "" {
		t.Errorf("a removed client's call: %+v", r.Body)
	}
	if _, page = b.get("/ui/clients"); strings.Contains(page, `id="c-`+ts.clientID+`"`) || !strings.Contains(page, `bob\u202e`) {
		t.Error("after the removal the page still lists the client, or lost the other")
	}
	if resp, _ := b.post("/ui/clients/"+ts.clientID+"/enable", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusNotFound {
		t.Errorf("enabling a removed client: HTTP %d", resp.StatusCode)
	}

	var got []string
	for _, r := range records(t, e) {
		if strings.HasPrefix(r.Action, "client.") {
			if r.ClientID != "person (approval page)" {
				t.Errorf("%s is not the person's: %q", r.Action, r.ClientID)
			}
			if r.Kind == audit.KindDecision && !strings.Contains(r.Explanation, ts.clientID) {
				t.Errorf("%s does not name the client: %q", r.Action, r.Explanation)
			}
			got = append(got, r.Action+" "+r.Kind+" "+r.Result+" "+r.Code)
		}
	}
	want := []string{"client.disable decision disable requested ", "client.disable outcome success ",
		"client.enable decision enable requested ", "client.enable outcome success ",
		"client.remove decision remove requested ", "client.remove outcome success "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A page whose audit log cannot record disables all the same (it only takes away) and
// enables nothing.
func TestClientsPageUnrecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.addClient("carol")
	c, err := e.g.Store.ClientByName(e.ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	b, csrf, same := e.unrecordedPage()
	if resp, body := b.post("/ui/clients/"+c.ID+"/disable", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("an unrecorded disable: HTTP %d %s", resp.StatusCode, body)
	}
	if c, err := e.g.Store.GetClient(e.ctx, c.ID); err != nil || !c.Disabled {
		t.Errorf("the unrecorded disable was not made: %+v %v", c, err)
	}
	if resp, _ := b.post("/ui/clients/"+c.ID+"/enable", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an unrecorded enable: HTTP %d", resp.StatusCode)
	}
	if c, err := e.g.Store.GetClient(e.ctx, c.ID); err != nil || !c.Disabled {
		t.Errorf("the unrecorded enable was made: %+v %v", c, err)
	}
}

// records are the gateway's audit records, oldest first.
func records(t *testing.T, e *env) []audit.Record {
	t.Helper()
	return gatewaytest.AuditRecords(t, e.g.Store)
}
