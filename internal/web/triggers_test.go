package web_test

import (
	"encoding/json"
	"net/http"
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
