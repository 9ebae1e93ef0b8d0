package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/trigger"
)

// triggerView is one trigger as the triggers page shows it: what it waits for, what it does,
// its budget left, its next firing and its recent history. The client's name, the condition
// and the params came from the agent: rendered as text, revealed.
type triggerView struct {
	ID, State, Stopped, Client string
	When, Condition, Action    string
	Params                     string
	Left, Max                  int64
	Ends, Next                 string
	Active, Paused, Proposed   bool
	ConsentID                  string
	Recent                     []firingView
}

// firingView is one firing of a trigger.
type firingView struct {
	At, State, Why string
}

// triggersView is the triggers page.
type triggersView struct {
	Triggers []triggerView
	Clients  []clientChoice // the enabled clients a trigger the person sets up may fire as
	Problem  string         // what was wrong with the trigger the person last set up
}

// clientChoice is one client in the form's list.
type clientChoice struct{ ID, Name string }

// onTriggersPage is who changes a trigger here, for the audit log.
const onTriggersPage = "the person, on the triggers page"

// triggersAvailable answers 404 and reports false when the page lacks what it needs.
func (s *Server) triggersAvailable(w http.ResponseWriter) bool {
	if s.o.Triggers == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no triggers page.")
		return false
	}
	return true
}

// triggers lists every trigger, each with its budget left, its next firing and its latest
// firings, and a button that stops it for good.
func (s *Server) triggers(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.triggersAvailable(w) {
		return
	}
	ctx := r.Context()
	vs, err := s.o.Triggers.List(ctx, "")
	if err != nil {
		s.o.Logger.Warn("web: listing the triggers failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not list the triggers. Its log says why.")
		return
	}
	out := &triggersView{}
	if s.o.Store != nil {
		if cs, err := s.o.Store.ListClients(ctx); err == nil {
			for _, c := range cs {
				if !c.Disabled {
					out.Clients = append(out.Clients, clientChoice{ID: c.ID, Name: reveal(c.Name, false)})
				}
			}
		}
	}
	for i := len(vs) - 1; i >= 0 && len(out.Triggers) < MaxListed; i-- {
		v, err := s.o.Triggers.Get(ctx, vs[i].ID, "")
		if err != nil {
			continue
		}
		tv := triggerView{ID: v.ID, State: v.State, Stopped: reveal(v.Stopped, false), Client: reveal(v.ClientName, false),
			When: reveal(sourceWords(v), false), Condition: reveal(v.Condition, false), Action: reveal(v.Capability, false),
			Params: reveal(string(v.Params), false), Left: v.Left, Max: v.MaxFirings, Ends: consent.ShowDate(v.EndsAt),
			Active: v.State == trigger.StateActive, Paused: v.State == trigger.StatePaused, Proposed: v.State == trigger.StateProposed,
			ConsentID: v.ConsentID}
		if v.Next != nil {
			tv.Next = consent.ShowDate(*v.Next)
		}
		for _, f := range v.Recent[:min(len(v.Recent), 10)] {
			tv.Recent = append(tv.Recent, firingView{At: f.At.UTC().Format(time.RFC3339), State: f.State, Why: reveal(f.Why, false)})
		}
		out.Triggers = append(out.Triggers, tv)
	}
	s.render(w, http.StatusOK, "triggers.html", page{Title: "Triggers", Nav: "triggers", CSRF: csrf, Triggers: out, Now: s.o.Now()})
}

// sourceWords says where a trigger's events come from.
func sourceWords(v trigger.View) string {
	switch v.Source.Kind {
	case trigger.SourceSchedule:
		if sc, err := trigger.ParseSchedule(v.Source.Cron, v.Source.TimeZone); err == nil {
			return sc.Words()
		}
		return "the schedule " + v.Source.Cron + " (" + v.Source.TimeZone + ")"
	case trigger.SourceWebhook:
		return "a signed request to its webhook (POST " + v.HookPath + ")"
	case trigger.SourceEvent:
		return "the event " + v.Source.Event + " of the app " + v.Source.App
	case trigger.SourceReply:
		return "a typed reply of the client " + v.Source.From
	}
	return v.Source.Kind
}

// changeTrigger pauses, resumes or deletes (stops for good, revoking its token) the trigger
// of the path, as `capgate trigger` does, recorded as the person's.
func (s *Server) changeTrigger(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.triggersAvailable(w) {
		return
	}
	id, verb := r.PathValue("id"), r.PathValue("verb")
	change := map[string]func() (trigger.View, error){
		"pause":  func() (trigger.View, error) { return s.o.Triggers.Pause(r.Context(), id, onTriggersPage) },
		"resume": func() (trigger.View, error) { return s.o.Triggers.Resume(r.Context(), id, onTriggersPage) },
		"delete": func() (trigger.View, error) { return s.o.Triggers.Delete(r.Context(), id, onTriggersPage) },
	}[verb]
	if change == nil {
		s.message(w, http.StatusNotFound, "No such change", "A trigger can be paused, resumed or deleted.")
		return
	}
	_, err := change()
	switch {
	case err == nil:
		http.Redirect(w, r, "/ui/triggers", http.StatusSeeOther)
	case errors.Is(err, trigger.ErrNotFound):
		s.message(w, http.StatusNotFound, "No such trigger", "The trigger is gone: it may have been deleted meanwhile.")
	case errors.Is(err, trigger.ErrState):
		s.message(w, http.StatusConflict, "Not now", strings.TrimPrefix(err.Error(), trigger.ErrState.Error()+": "))
	default:
		s.o.Logger.Warn("web: changing a trigger failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not change the trigger. Its log says why.")
	}
}

// createTrigger sets up a trigger the person writes on the triggers page: a schedule, one
// action with its params, a count and an end date, to fire as the client they choose. It
// is checked as an agent's proposal is, approved by the person at once, and recorded.
func (s *Server) createTrigger(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.triggersAvailable(w) || s.o.Store == nil {
		return
	}
	f := r.PostForm
	bad := func(msg string) {
		s.message(w, http.StatusBadRequest, "Not set up", msg)
	}
	c, err := s.o.Store.GetClient(r.Context(), f.Get("client"))
	if err != nil || c.Disabled {
		bad("The field client must name an enabled client: the trigger fires as that client's calls.")
		return
	}
	count, err := strconv.ParseInt(strings.TrimSpace(f.Get("count")), 10, 64)
	if err != nil {
		bad("The field count must be a whole number of firings.")
		return
	}
	ends, err := time.Parse("2006-01-02", strings.TrimSpace(f.Get("ends")))
	if err != nil {
		bad("The field ends must be a date, such as 2027-01-31: the trigger stops at its start (UTC).")
		return
	}
	params := strings.TrimSpace(f.Get("params"))
	if params == "" {
		params = "{}"
	}
	spec := trigger.Spec{
		Source:    trigger.Source{Kind: trigger.SourceSchedule, Cron: strings.TrimSpace(f.Get("cron")), TimeZone: strings.TrimSpace(f.Get("time_zone"))},
		Condition: strings.TrimSpace(f.Get("condition")),
		Action:    trigger.Action{App: strings.TrimSpace(f.Get("app")), Method: strings.TrimSpace(f.Get("method")), Params: json.RawMessage(params)},
		Budget:    trigger.Budget{Count: count}, EndsAt: ends, Missed: f.Get("missed"), Reason: "set up by the person on the triggers page",
	}
	if !json.Valid(spec.Action.Params) {
		bad("The field params must be a JSON object, such as {\"category\": \"sound\", \"key\": \"master_volume\", \"value\": 10}.")
		return
	}
	_, err = s.o.Triggers.Create(r.Context(), broker.CallerOf(c), spec, onTriggersPage)
	switch {
	case err == nil:
		http.Redirect(w, r, "/ui/triggers", http.StatusSeeOther)
	case errors.Is(err, trigger.ErrInvalid), errors.Is(err, trigger.ErrRefused), errors.Is(err, trigger.ErrTooMany):
		bad(reveal(err.Error(), false))
	default:
		s.o.Logger.Warn("web: setting up a trigger failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not set up the trigger. Its log says why.")
	}
}
