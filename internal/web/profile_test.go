package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/toolserver"
)

// The profile page saves the person's display name, language and time zone (a bad one is
// refused, naming the field) and lets a tool server have them or not; every change is in the
// audit log, without the values; a post without the page's CSRF token changes nothing.
func TestProfilePage(t *testing.T) {
	t.Parallel()
	e, _ := toolEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	if resp, _ := b.postForm("/ui/profile", url.Values{"csrf": {csrf}, "display_name": {"Ayşe Yılmaz"}, "language": {"TR"}, "time_zone": {"Europe/Istanbul"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving: HTTP %d", resp.StatusCode)
	}
	if p, err := profile.Load(e.ctx, e.g.Store); err != nil || p != (profile.Profile{DisplayName: "Ayşe Yılmaz", Language: "tr", TimeZone: "Europe/Istanbul"}) {
		t.Fatalf("saved %+v %v", p, err)
	}
	resp, body := b.postForm("/ui/profile", url.Values{"csrf": {csrf}, "time_zone": {"Mars/Base"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "time_zone") || strings.Contains(body, "Mars/Base") {
		t.Errorf("a bad time zone: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.postForm("/ui/profile", url.Values{"csrf": {"nope"}, "display_name": {"Mallory"}}); resp.StatusCode == http.StatusSeeOther {
		t.Error("a post without the CSRF token was taken")
	}
	if p, _ := profile.Load(e.ctx, e.g.Store); p.DisplayName != "Ayşe Yılmaz" {
		t.Errorf("the profile is now %+v", p)
	}
	_, page := b.get("/ui/profile")
	if !strings.Contains(page, `value="Ayşe Yılmaz"`) || !strings.Contains(page, `id="grant-srv"`) || !strings.Contains(page, "asks you for every field") {
		t.Errorf("the profile page:\n%s", page)
	}
	if resp, _ := b.postForm("/ui/profile/grants", url.Values{"csrf": {csrf}, "server": {"srv"}, "grant": {"true"}}); resp.StatusCode != http.StatusSeeOther || !profile.Granted(e.ctx, e.g.Store, "srv") {
		t.Fatalf("granting: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.postForm("/ui/profile/grants", url.Values{"csrf": {csrf}, "server": {"other"}, "grant": {"true"}}); resp.StatusCode != http.StatusBadRequest || profile.Granted(e.ctx, e.g.Store, "other") {
		t.Errorf("granting to no tool server: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.postForm("/ui/profile/grants", url.Values{"csrf": {csrf}, "server": {"srv"}, "grant": {"false"}}); resp.StatusCode != http.StatusSeeOther || profile.Granted(e.ctx, e.g.Store, "srv") {
		t.Fatalf("taking back: HTTP %d", resp.StatusCode)
	}
	actions := map[string]int{}
	for _, r := range gatewaytest.AuditRecords(t, e.g.Store) {
		actions[r.Action]++
		if strings.Contains(r.Explanation, "Ayşe") || strings.Contains(r.Explanation, "Istanbul") {
			t.Errorf("a record holds a profile value: %q", r.Explanation)
		}
	}
	if actions["profile.set"] < 2 || actions["profile.grant"] != 2 || actions["profile.take_back"] != 2 {
		t.Errorf("the audit log has %v", actions)
	}
}

// A tool server's form is shown on the request's own page as a form, with the server's words
// as text and what the granted profile filled in marked so; the list shows no bare approve
// for it, and a bare approval is refused; an answer that does not fit is shown why and sends
// nothing; what the person enters is what the server gets, and the call goes on.
func TestFormRequestOnThePage(t *testing.T) {
	t.Parallel()
	e, _ := toolEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	if err := profile.Save(e.ctx, e.g.Store, profile.Profile{DisplayName: "Ayşe"}); err != nil {
		t.Fatal(err)
	}
	if err := profile.SetGrant(e.ctx, e.g.Store, "srv", true); err != nil {
		t.Fatal(err)
	}
	key := e.addClient("agent")
	done := e.callAppAsync(key, "srv", "echo", `{"text":"form:survey"}`, "")
	call := e.waitPending(consent.KindCall)
	if resp, _ := b.postForm("/ui/requests/"+call+"/approve", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approving the call: HTTP %d", resp.StatusCode)
	}
	id := e.waitPending(toolserver.KindForm)
	_, page := b.get("/ui/requests/" + id)
	for _, want := range []string{"asks you to fill in a form", `action="/ui/requests/` + id + `/form"`, `name="field:rating"`, `name="field:name" value="Ayşe"`,
		"filled in from your profile (display_name)", `<option value="green">`, `type="checkbox" name="field:subscribe"`, "How was it?", "A few details, please."} {
		if !strings.Contains(page, want) {
			t.Errorf("the form's page lacks %q", want)
		}
	}
	_, list := b.get("/ui/requests")
	if strings.Contains(list, `action="/ui/requests/`+id+`/approve"`) {
		t.Error("the list offers a bare approve of the form")
	}
	if resp, _ := b.postForm("/ui/requests/"+id+"/approve", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bare approval of the form: HTTP %d", resp.StatusCode)
	}
	resp, body := b.postForm("/ui/requests/"+id+"/form", url.Values{"csrf": {csrf}, "field:name": {"Ayşe"}, "field:rating": {"five"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `&#34;rating&#34;: must be a whole number`) {
		t.Errorf("a bad answer: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.postForm("/ui/requests/"+id+"/form", url.Values{"csrf": {csrf}, "field:name": {"A. Y."}, "field:rating": {"4"}, "field:colour": {"green"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sending the form: HTTP %d", resp.StatusCode)
	}
	r := <-done
	if r.Body.Status != "success" || !strings.Contains(string(r.Body.Result), "echo: accept") {
		t.Fatalf("the call after the form: %s %s %s", r.Body.Status, r.Body.ErrorCode, r.Body.Result)
	}
	if resp, _ := b.postForm("/ui/requests/"+id+"/form", url.Values{"csrf": {csrf}, "field:name": {"again"}, "field:rating": {"1"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second answer: HTTP %d", resp.StatusCode)
	}
	var filled bool
	for _, rec := range gatewaytest.AuditRecords(t, e.g.Store) {
		if rec.Action == "toolserver.input" && rec.Result == "accept" && rec.ConsentID == id && rec.Decision == audit.DecisionAllow {
			filled = true
		}
	}
	if !filled {
		t.Error("no audit record of the form the person filled in")
	}
}
