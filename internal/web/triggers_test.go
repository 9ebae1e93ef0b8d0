package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

// A trigger an agent proposes is shown to the person on its request's card in plain words
// (when, the condition, the action, the budget, the end date, the mandate); approved there,
// it is listed on the triggers page with its budget and next firing, and the page pauses,
// resumes and revokes it.
func TestTriggerOnThePages(t *testing.T) {
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	same := map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}
	csrf := b.login(e.g.LoginLink())
	e.addClient("night-agent")
	c, err := e.g.Store.ClientByName(e.ctx, "night-agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p, err := e.g.Triggers.Propose(e.ctx, broker.CallerOf(c), trigger.Spec{
		Source:    trigger.Source{Kind: trigger.SourceSchedule, Cron: "0 22 * * *", TimeZone: "Europe/Istanbul"},
		Condition: `event.scheduled_at != ""`,
		Action: trigger.Action{App: "org.capgate.settings", Method: "set_setting",
			Params: json.RawMessage(`{"category":"sound","key":"master_volume","value":10}`)},
		Budget: trigger.Budget{Count: 30}, EndsAt: time.Now().Add(30 * 24 * time.Hour), Reason: "quiet evenings",
	})
	if err != nil {
		t.Fatal(err)
	}
	_, card := b.get("/ui/requests/" + p.ConsentID)
	for _, want := range []string{"proposes a trigger", "at 22:00 every day", "Europe/Istanbul", "event.scheduled_at", "at most 30 firings",
		"settings.org.capgate.settings.set_setting", "mandate for system.settings.write", "quiet evenings", "revocable"} {
		if !strings.Contains(card, want) {
			t.Errorf("the trigger's card lacks %q", want)
		}
	}
	b.answer(p.ConsentID, "approve", csrf, nil)
	if err := e.g.Triggers.Step(e.ctx); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/ui/triggers")
	for _, want := range []string{`aria-current="page">Triggers</a>`, p.ID, "active", "30 of 30 firings", "Next firing", "night-agent", "/ui/triggers/" + p.ID + "/pause"} {
		if !strings.Contains(page, want) {
			t.Errorf("the triggers page lacks %q", want)
		}
	}
	post := func(verb string) {
		t.Helper()
		resp, body := b.post("/ui/triggers/"+p.ID+"/"+verb, map[string][]string{"csrf": {csrf}}, same)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: HTTP %d %s", verb, resp.StatusCode, body)
		}
	}
	post("pause")
	if v, _ := e.g.Triggers.Get(e.ctx, p.ID, ""); v.State != trigger.StatePaused {
		t.Fatalf("after pause: %s", v.State)
	}
	if resp, _ := b.post("/ui/triggers/"+p.ID+"/pause", map[string][]string{"csrf": {"forged"}}, same); resp.StatusCode == http.StatusSeeOther {
		t.Fatal("a change without the session's CSRF token was made")
	}
	post("resume")
	post("delete")
	if _, err := e.g.Triggers.Get(e.ctx, p.ID, ""); err == nil {
		t.Fatal("the revoked trigger is still there")
	}
	if resp, _ := b.post("/ui/triggers/"+p.ID+"/explode", map[string][]string{"csrf": {csrf}}, same); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown change: HTTP %d", resp.StatusCode)
	}
}

// The person sets up a trigger themselves on the triggers page: checked as an agent's
// proposal is, approved at once, active, firing as the client chosen.
func TestPersonSetsUpTrigger(t *testing.T) {
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	same := map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}
	csrf := b.login(e.g.LoginLink())
	e.addClient("helper")
	c, err := e.g.Store.ClientByName(e.ctx, "helper")
	if err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/ui/triggers")
	if !strings.Contains(page, `action="/ui/triggers"`) || !strings.Contains(page, c.ID) {
		t.Fatal("the triggers page has no form to set one up")
	}
	form := url.Values{"csrf": {csrf}, "client": {c.ID}, "cron": {"30 7 * * 1-5"}, "time_zone": {"Europe/Berlin"},
		"app": {"org.capgate.settings"}, "method": {"set_setting"}, "params": {`{"category":"sound","key":"master_volume","value":40}`},
		"count": {"20"}, "ends": {time.Now().Add(10 * 24 * time.Hour).UTC().Format("2006-01-02")}, "missed": {"skip"}}
	if resp, body := b.post("/ui/triggers", form, same); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no mandate") {
		t.Fatalf("without a mandate: HTTP %d %s", resp.StatusCode, body)
	}
	if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("params", "{not json")
	if resp, _ := b.post("/ui/triggers", bad, same); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("params that are not JSON: HTTP %d", resp.StatusCode)
	}
	if resp, body := b.post("/ui/triggers", form, same); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set up: HTTP %d %s", resp.StatusCode, body)
	}
	vs, err := e.g.Triggers.List(e.ctx, c.ID)
	if err != nil || len(vs) != 1 || vs[0].State != trigger.StateActive || vs[0].Next == nil {
		t.Fatalf("the person's trigger: %+v %v", vs, err)
	}
	cr, err := e.g.Store.GetConsent(e.ctx, vs[0].ConsentID)
	if err != nil || cr.State != store.ConsentApproved || !strings.Contains(cr.AnsweredBy, "triggers page") {
		t.Fatalf("its approval: %+v %v", cr, err)
	}
}
