package toolserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// formCall calls echo with text, approving the call, and answers the form request it opens
// with answer (nil: none is expected); it returns the response, the form request's id and
// what it showed.
func (f *fixture) formCall(text string, answer func(ctx context.Context, id string) error) (string, string, toolserver.FormRequest) {
	f.t.Helper()
	var asked <-chan string
	if answer != nil {
		asked = gatewaytest.AnswerNext(f.t, f.g.Store, toolserver.KindForm, answer)
	}
	params, _ := json.Marshal(map[string]string{"text": text})
	r := f.approvedCall("echo", string(params))
	var out struct{ Content []struct{ Text string } }
	if r.Body.Status != "success" || json.Unmarshal(r.Body.Result, &out) != nil || len(out.Content) == 0 {
		f.t.Fatalf("%s: %s %s %s", text, r.Body.ErrorCode, r.Body.ErrorMessage, r.Body.Result)
	}
	if asked == nil {
		return out.Content[0].Text, "", toolserver.FormRequest{}
	}
	id := <-asked
	c, err := f.g.Store.GetConsent(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var req struct{ Params json.RawMessage }
	if err := json.Unmarshal(c.Payload, &req); err != nil {
		f.t.Fatal(err)
	}
	fr, err := toolserver.FormRequestOf(req.Params)
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Content[0].Text, id, fr
}

// lastAnswer is the test server's record of the client's last answer.
func (f *fixture) lastAnswer() map[string]any {
	f.t.Helper()
	as := f.answers()
	if len(as) == 0 {
		f.t.Fatal("the server recorded no answer")
	}
	return as[len(as)-1]
}

// fill answers a form request as the approval page does: the person's answer kept beside the
// request, then the request approved.
func (f *fixture) fill(texts map[string]string) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		c, err := f.g.Store.GetConsent(ctx, id)
		if err != nil {
			return err
		}
		var req struct{ Params json.RawMessage }
		_ = json.Unmarshal(c.Payload, &req)
		fr, err := toolserver.FormRequestOf(req.Params)
		if err != nil {
			return err
		}
		content, err := toolserver.ParseFormAnswer(fr.Fields, texts)
		if err != nil {
			return err
		}
		if err := toolserver.SaveFormAnswer(ctx, f.g.Store, id, content); err != nil {
			return err
		}
		return f.g.Consent.Approve(ctx, id, "person", false)
	}
}

// A tool server's form (one that asks for no secret) goes to the person as a consent request
// of kind KindForm showing its fields; what the person enters is exactly what the server
// gets (accept), declining is decline, and each answer is audited. Under every revision.
func TestFormGoesToThePerson(t *testing.T) {
	eachVariant(t, func(t *testing.T, v variant) {
		f := newFixtureAs(t, nil, true, v)
		said, id, fr := f.formCall("form:survey", f.fill(map[string]string{"name": "Ayşe", "rating": "5", "subscribe": "true"}))
		if said != "echo: accept" {
			t.Fatalf("the server was told %q", said)
		}
		if fr.Message != "A few details, please." || len(fr.Fields) != 4 {
			t.Fatalf("the form shown: %+v", fr)
		}
		for _, fl := range fr.Fields {
			if fl.Value != nil {
				t.Errorf("%s was filled in without a grant: %v", fl.Name, fl.Value)
			}
		}
		a := f.lastAnswer()
		content, _ := a["content"].(map[string]any)
		if a["action"] != "accept" || content["name"] != "Ayşe" || content["rating"] != float64(5) || content["subscribe"] != true || len(content) != 3 || content["colour"] != nil {
			t.Errorf("the server got %v", a)
		}
		if !inputAudited(t, f, toolserver.AnswerAccept, id) {
			t.Error("no audit record of the filled-in form")
		}

		said, id, _ = f.formCall("form:survey", func(ctx context.Context, id string) error { return f.g.Consent.Deny(ctx, id, "person") })
		if said != "echo: decline" || f.lastAnswer()["content"] != nil {
			t.Errorf("declined: the server was told %q, %v", said, f.lastAnswer())
		}
		if !inputAudited(t, f, toolserver.AnswerDecline, id) {
			t.Error("no audit record of the declined form")
		}

		// An approval given without the form's answer (elsewhere than the form) sends nothing.
		said, _, _ = f.formCall("form:survey", func(ctx context.Context, id string) error { return f.g.Consent.Approve(ctx, id, "person", false) })
		if said != "echo: cancel" || f.lastAnswer()["content"] != nil {
			t.Errorf("approved without an answer: %q, %v", said, f.lastAnswer())
		}
	})
}

// The person's profile is given only to a server the person granted it to: without a grant
// the profile form goes to the person unfilled; with one, a form of nothing but profile
// fields is answered from the profile at once, nobody asked; a form with other fields goes
// to the person with the profile fields filled in, for them to keep or change. A form that
// asks for card details is declined and flagged whatever the grant; one of more fields than
// capgate shows is declined with the rule it breaks.
func TestFormFilledFromTheProfileOnlyUnderAGrant(t *testing.T) {
	f := newFixtureAs(t, nil, true, variants[0])
	if err := profile.Save(f.ctx, f.g.Store, profile.Profile{DisplayName: "Ayşe Yılmaz", TimeZone: "Europe/Istanbul"}); err != nil {
		t.Fatal(err)
	}
	said, _, fr := f.formCall("form:profile", f.fill(map[string]string{"name": "A."}))
	if said != "echo: accept" || fr.Fields[0].Value != nil || fr.Fields[1].Value != nil {
		t.Fatalf("no grant: %q %+v", said, fr.Fields)
	}
	if c, _ := f.lastAnswer()["content"].(map[string]any); c["name"] != "A." || len(c) != 1 {
		t.Errorf("no grant: the server got %v", f.lastAnswer())
	}

	if err := profile.SetGrant(f.ctx, f.g.Store, "srv", true); err != nil {
		t.Fatal(err)
	}
	before := f.formConsents()
	if said, _, _ := f.formCall("form:profile", nil); said != "echo: accept" {
		t.Fatalf("granted: %q", said)
	}
	if c, _ := f.lastAnswer()["content"].(map[string]any); c["name"] != "Ayşe Yılmaz" || c["time_zone"] != "Europe/Istanbul" || len(c) != 2 {
		t.Errorf("granted: the server got %v", f.lastAnswer())
	}
	if f.formConsents() != before {
		t.Error("the person was asked a form the profile filled")
	}
	if !inputAudited(t, f, toolserver.AnswerAccept, "") {
		t.Error("no audit record of the form capgate filled")
	}

	_, _, fr = f.formCall("form:survey", f.fill(map[string]string{"name": "Ayşe Yılmaz", "rating": "4"}))
	for _, fl := range fr.Fields {
		if (fl.Name == "name") != (fl.Value == "Ayşe Yılmaz") {
			t.Errorf("the survey's %s shows %v", fl.Name, fl.Value)
		}
	}

	for _, form := range []string{"card", "many"} {
		if said, _, _ := f.formCall("form:"+form, nil); said != "echo: decline" {
			t.Errorf("%s: %q", form, said)
		}
		meta, _ := f.lastAnswer()["_meta"].(map[string]any)
		reason, _ := meta[toolserver.ReasonMeta].(string)
		if (form == "card") != (reason == toolserver.ReasonFormSecret+" (flagged)") || reason == "" || f.lastAnswer()["content"] != nil {
			t.Errorf("%s: declined with %q", form, reason)
		}
	}
	if err := profile.SetGrant(f.ctx, f.g.Store, "srv", false); err != nil {
		t.Fatal(err)
	}
	if _, _, fr := f.formCall("form:profile", f.fill(map[string]string{"name": "x"})); fr.Fields[0].Value != nil {
		t.Error("the grant taken back: the profile is still filled in")
	}
}

// formConsents counts the form requests shown to the person.
func (f *fixture) formConsents() int {
	f.t.Helper()
	cs, err := f.g.Store.ListConsents(f.ctx, "")
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if c.Kind == toolserver.KindForm {
			n++
		}
	}
	return n
}

// ParseFormAnswer holds the person's answer to its form: types, choices and required fields,
// each error naming the field.
func TestParseFormAnswer(t *testing.T) {
	fields := []toolserver.FormField{
		{Name: "name", Type: toolserver.FieldString, Required: true},
		{Name: "n", Type: toolserver.FieldInteger},
		{Name: "x", Type: toolserver.FieldNumber},
		{Name: "c", Type: toolserver.FieldString, Enum: []string{"red", "green"}},
		{Name: "b", Type: toolserver.FieldBoolean},
	}
	got, err := toolserver.ParseFormAnswer(fields, map[string]string{"name": "Ayşe", "n": " 42 ", "x": "2.5", "c": "red", "b": "true"})
	if err != nil || got["name"] != "Ayşe" || got["n"] != int64(42) || got["x"] != 2.5 || got["c"] != "red" || got["b"] != true {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := toolserver.ParseFormAnswer(fields, map[string]string{"name": "a"}); err != nil || len(got) != 2 || got["b"] != false {
		t.Errorf("optional fields left empty: %v %v", got, err)
	}
	for _, bad := range []map[string]string{
		{}, {"name": ""}, {"name": "a", "n": "4.5"}, {"name": "a", "n": "9007199254740993"}, {"name": "a", "x": "NaN"}, {"name": "a", "x": "Inf"},
		{"name": "a", "c": "blue"}, {"name": "a", "b": "yes"}, {"name": "\xff"},
	} {
		if _, err := toolserver.ParseFormAnswer(fields, bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	_ = store.ConsentPending
}
