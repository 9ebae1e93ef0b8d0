package web_test

import (
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/web"
	"github.com/capgate/capgate/manifest"
)

const reviewPerm = "notes.org.example.pad.review" // no permission declared: its id

// The mandates page lists every permission of the enabled capabilities with its ceiling,
// sets each autonomy through the broker (a call right after follows it), refuses a choice
// above the ceiling, deletes, and shows a capability's hostile name as text.
func TestMandatesPage(t *testing.T) {
	e := newEnv(t, 0)
	// A page on the gateway's own consent service, store, broker, registry and audit writer.
	ws := web.New(web.Options{Consent: e.g.Consent, Store: e.g.Store, Broker: e.g.Broker, Registry: e.g.Registry, Audit: e.g.Audit})
	srv := httptest.NewServer(ws.Handler())
	defer srv.Close()
	b := newBrowser(t, srv.URL, srv.Client())
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}

	if resp, _ := b.get("/ui/mandates"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("mandates without a session: HTTP %d", resp.StatusCode)
	}
	if resp, _ := b.post("/ui/mandates", url.Values{"csrf": {"x"}, "permission": {"app.pad.write"}, "autonomy": {"handoff"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("set without a session: HTTP %d", resp.StatusCode)
	}
	csrf := b.login(ws.LoginLink())
	resp, page := b.get("/ui/mandates")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mandates: HTTP %d", resp.StatusCode)
	}
	for _, want := range []string{`id="m-app.pad.write"`, `id="m-app.pad.send"`, `id="m-app.pad.publish"`, `id="m-` + reviewPerm + `"`,
		`<dd class="ceiling">ask</dd>`, "Review &lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;&lt;script&gt;",
		`aria-current="page">Mandates</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the mandates page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 || strings.Contains(page, "<img") {
		t.Errorf("the mandates page has %d script elements or an img: markup from a manifest leaked", n)
	}
	review := page[strings.Index(page, `id="m-`+reviewPerm+`"`):]
	review = review[:strings.Index(review, "</article>")]
	if strings.Contains(review, `value="act"`) || strings.Contains(review, `value="act_if_agreed"`) || !strings.Contains(review, `value="ask"`) {
		t.Errorf("the review form offers choices above its ceiling: %s", review)
	}

	set := func(perm, choice string, header map[string]string, form url.Values) (*http.Response, string) {
		t.Helper()
		f := url.Values{"csrf": {csrf}, "permission": {perm}, "autonomy": {choice}}
		for k, v := range form {
			f[k] = v
		}
		return b.post("/ui/mandates", f, header)
	}
	mandate := func(perm string) (store.Mandate, error) { return e.g.Store.GetMandate(e.ctx, perm) }

	for _, c := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{"csrf": {""}}, nil},
		{"wrong token", url.Values{"csrf": {csrf[:len(csrf)-1] + "x"}}, nil},
		{"cross-origin", nil, map[string]string{"Origin": "http://evil.example"}},
	} {
		if resp, _ := set("app.pad.write", "handoff", c.header, c.form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("set, %s: HTTP %d, want 403", c.name, resp.StatusCode)
		}
	}
	if _, err := mandate("app.pad.write"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused form stored a mandate: %v", err)
	}

	for _, a := range manifest.Autonomies {
		resp, body := set("app.pad.write", string(a), same, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/mandates" {
			t.Fatalf("set %s: HTTP %d %s", a, resp.StatusCode, body)
		}
		m, err := mandate("app.pad.write")
		if err != nil || m.Autonomy != string(a) {
			t.Fatalf("after setting %s the store holds %+v %v", a, m, err)
		}
		if a == manifest.AutonomyActIfAgreed {
			_, page := b.get("/ui/mandates")
			if m.Wording == "" || m.AgreedAt.IsZero() || !strings.HasPrefix(m.AgreedID, "ui:session-") ||
				!strings.Contains(page, "You agree: “"+html.EscapeString(m.Wording)+"”") || strings.Contains(m.AgreedID, csrf) {
				t.Errorf("act_if_agreed recorded %+v, not the wording shown", m)
			}
		}
	}

	for _, c := range []struct{ perm, choice, want string }{
		{reviewPerm, "act", "above the capability&#39;s ceiling"},
		{reviewPerm, "act_if_agreed", "above the capability&#39;s ceiling"},
		{reviewPerm, "sometimes", "field autonomy"},
		{"fs.nothing", "ask", "field permission"},
	} {
		resp, body := set(c.perm, c.choice, same, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("set %s to %s: HTTP %d, want 400 saying %q", c.perm, c.choice, resp.StatusCode, c.want)
		}
		if !strings.Contains(body, "field autonomy") && !strings.Contains(body, "field permission") {
			t.Errorf("the refusal names no field")
		}
		if _, err := mandate(c.perm); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a refused choice %s was stored for %s: %v", c.choice, c.perm, err)
		}
	}
	if resp, _ := set(reviewPerm, "ask", same, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("ask, at the ceiling, was refused: HTTP %d", resp.StatusCode)
	}

	// handoff: a real call through the IPC API is handed off at once, and nothing runs.
	if resp, body := set("app.pad.write", "handoff", same, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set handoff: HTTP %d %s", resp.StatusCode, body)
	}
	key := e.addClient("mandates")
	if r := <-e.callAsync(key, "write", `{"id":"h","text":"x"}`, ""); r.Body.ErrorCode != policy.CodeHandoff || e.app.note("h") != "" {
		t.Errorf("a call under a handoff mandate: %+v", r.Body)
	}

	// A pattern mandate shows in its own section, and can be removed.
	if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "fs.*", Autonomy: "ask"}); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/ui/mandates"); !strings.Contains(page, `id="p-fs.*"`) || !strings.Contains(page, "Other mandates") {
		t.Errorf("the pattern mandate is not shown")
	}
	if resp, _ := set("fs.*", "none", same, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("remove the pattern: HTTP %d", resp.StatusCode)
	}
	if _, err := mandate("fs.*"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the pattern mandate is still stored: %v", err)
	}

	// Delete: no mandate, and the next decision no longer hands the call off, though the
	// broker had the handoff mandate in its cache just before.
	c, err := e.g.Store.ClientByName(e.ctx, "mandates")
	if err != nil {
		t.Fatal(err)
	}
	explain := func() policy.Decision {
		return e.g.Broker.Explain(e.ctx, broker.Caller{ClientID: c.ID, Name: "mandates", Trust: manifest.AuthUser},
			broker.Request{Action: "execute", App: "pad", Method: "write", Params: []byte(`{"id":"h","text":"x"}`)})
	}
	if d := explain(); d.Outcome != policy.Handoff {
		t.Fatalf("before delete the decision is %+v, want handoff", d)
	}
	if resp, _ := set("app.pad.write", "none", same, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: HTTP %d", resp.StatusCode)
	}
	if _, err := mandate("app.pad.write"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete the mandate is still stored: %v", err)
	}
	if d := explain(); d.Outcome == policy.Handoff {
		t.Errorf("after delete the decision still hands off: %+v", d)
	}

	// Every change made is in the audit log, its decision before its outcome, by the person;
	// no refused form left a record.
	sets := e.auditActions("mandate.set")
	want := 2 * (len(manifest.Autonomies) + 2) // each autonomy, review's ask, the second handoff
	if len(sets) != want {
		t.Errorf("mandate.set records: %d, want %d: %+v", len(sets), want, sets)
	}
	for i := 0; i+1 < len(sets); i += 2 {
		d, o := sets[i], sets[i+1]
		if d.Kind != audit.KindDecision || o.Kind != audit.KindOutcome || o.Result != "success" ||
			d.ClientID != o.ClientID || !strings.Contains(d.ClientID, "person") || d.Permission == "" || d.Permission != o.Permission {
			t.Errorf("mandate.set records %d and %d: %+v %+v", i, i+1, d, o)
		}
	}
	if len(sets) > 0 && (sets[0].Permission != "app.pad.write" || !strings.Contains(sets[0].Explanation, "to "+string(manifest.Autonomies[0]))) {
		t.Errorf("the first mandate.set names %q: %s", sets[0].Permission, sets[0].Explanation)
	}
	dels := e.auditActions("mandate.delete")
	if len(dels) != 4 || dels[0].Permission != "fs.*" || dels[2].Permission != "app.pad.write" || dels[3].Result != "success" {
		t.Errorf("mandate.delete records: %+v", dels)
	}
}

// A mandate decides how later calls run: a change whose audit record cannot be written is not
// made, and the page says so.
func TestMandateChangeUnrecordedIsNotMade(t *testing.T) {
	e := newEnv(t, 0)
	b, csrf, same := e.unrecordedPage()
	for _, choice := range []string{"act", "none"} {
		if choice == "none" {
			if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "app.pad.write", Autonomy: "ask"}); err != nil {
				t.Fatal(err)
			}
		}
		resp, body := b.post("/ui/mandates", url.Values{"csrf": {csrf}, "permission": {"app.pad.write"}, "autonomy": {choice}}, same)
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "did not make it") {
			t.Errorf("%s without an audit log: HTTP %d %s", choice, resp.StatusCode, body)
		}
		m, err := e.g.Store.GetMandate(e.ctx, "app.pad.write")
		switch choice {
		case "act":
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("an unrecorded act mandate was stored: %+v %v", m, err)
			}
		case "none":
			if err != nil || m.Autonomy != "ask" {
				t.Errorf("an unrecorded removal removed the mandate: %+v %v", m, err)
			}
		}
	}
}
