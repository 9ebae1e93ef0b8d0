package toolserver_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// callAnswering calls echo with text, approving the call's consent request and answering
// the URL request the call opens with answer (nil: none is expected); it returns the
// response and the URL request's id and payload.
func (f *fixture) callAnswering(text string, answer func(ctx context.Context, id string) error) (ipc.Response, string, consent.Request) {
	f.t.Helper()
	var asked <-chan string
	if answer != nil {
		asked = gatewaytest.AnswerNext(f.t, f.g.Store, toolserver.KindURL, answer)
	}
	params, _ := json.Marshal(map[string]string{"text": text})
	r := f.approvedCall("echo", string(params))
	if asked == nil {
		return r, "", consent.Request{}
	}
	id := <-asked
	c, err := f.g.Store.GetConsent(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var req consent.Request
	if err := json.Unmarshal(c.Payload, &req); err != nil {
		f.t.Fatal(err)
	}
	return r, id, req
}

// answers are what the test server recorded of the client's answers to its requests.
func (f *fixture) answers() []map[string]any {
	f.t.Helper()
	files, _ := filepath.Glob(filepath.Join(f.records, "server-*.json"))
	var out []map[string]any
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.t.Fatal(err)
		}
		var rec struct{ Answers []map[string]any }
		_ = json.Unmarshal(data, &rec)
		out = append(out, rec.Answers...)
	}
	return out
}

func inputAudited(t *testing.T, f *fixture, result, consentID string) bool {
	t.Helper()
	es, err := f.g.Store.AuditRange(f.ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		var r map[string]any
		_ = json.Unmarshal(e.Body, &r)
		if r["action"] == "toolserver.input" && r["result"] == result && (consentID == "" || r["consent_id"] == consentID) &&
			r["capability"] == "tool.mcp.srv.echo" && r["client_id"] == "cl_alice" {
			return true
		}
	}
	return false
}

// A tool server's URL request goes to the person as a consent request of kind KindURL that
// shows the URL exactly as sent, names the call it came with, and is answered on the
// approval page: approving answers accept, denying decline, and the server is told which.
// The same holds whether the server speaks 2026-07-28 (an input request of the call,
// answered by retrying it) or an older revision (elicitation/create).
func TestURLRequestGoesToThePerson(t *testing.T) {
	eachVariant(t, func(t *testing.T, v variant) {
		f := newFixtureAs(t, nil, true, v)
		const page = "https://login.example.com/authorize?client=srv&state=1"
		r, id, req := f.callAnswering("url:"+page, func(ctx context.Context, id string) error {
			return f.g.Consent.Approve(ctx, id, "person", false)
		})
		wantOutput(t, "approved URL request", r, "echo", "echo: accept")
		var params map[string]string
		if err := json.Unmarshal(req.Params, &params); err != nil || params["url"] != page || params["message"] != "Sign in to continue." {
			t.Errorf("the URL request's params: %s %v", req.Params, err)
		}
		if !strings.Contains(req.Summary, `"srv"`) || !strings.Contains(req.Summary, "tool.mcp.srv.echo") ||
			!strings.Contains(req.Summary, "cl_alice") || !strings.Contains(req.Summary, "does not open it") {
			t.Errorf("the URL request's summary: %s", req.Summary)
		}
		if req.Risk != "high" || req.Reason != "" {
			t.Errorf("the URL request: risk %q, reason %q", req.Risk, req.Reason)
		}
		if !inputAudited(t, f, toolserver.AnswerAccept, id) {
			t.Error("no audit record of the accepted URL request")
		}

		r, id, _ = f.callAnswering("url:"+page, func(ctx context.Context, id string) error {
			return f.g.Consent.Deny(ctx, id, "person")
		})
		wantOutput(t, "denied URL request", r, "echo", "echo: decline")
		if !inputAudited(t, f, toolserver.AnswerDecline, id) {
			t.Error("no audit record of the declined URL request")
		}
		if got, _ := f.g.Store.GetConsent(f.ctx, id); got.State != store.ConsentDenied {
			t.Errorf("the denied URL request is %s", got.State)
		}
		for _, a := range f.answers() {
			if _, ok := a["content"]; ok {
				t.Errorf("capgate answered a URL request with content: %v", a)
			}
		}
	})
}

// A URL capgate would not show the person as it is (another scheme, credentials in it) is
// declined at once with the reason, and nobody is asked.
func TestBadURLRequestDeclined(t *testing.T) {
	f := newFixtureAs(t, nil, true, variants[0])
	for _, bad := range []string{"javascript:alert(1)", "https://user:pass@login.example.com/", "file:///etc/passwd", "https://exa\u0000mple.com/"} {
		r, _, _ := f.callAnswering("url:"+bad, nil)
		wantOutput(t, bad, r, "echo", "echo: decline")
	}
	cs, err := f.g.Store.ListConsents(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Kind == toolserver.KindURL {
			t.Errorf("a bad URL was shown to the person: %s", c.Payload)
		}
	}
	as := f.answers()
	if len(as) != 4 {
		t.Fatalf("the server recorded %d answers, want 4", len(as))
	}
	for _, a := range as {
		meta, _ := a["_meta"].(map[string]any)
		if a["action"] != "decline" || meta[toolserver.ReasonMeta] != toolserver.ReasonBadURL {
			t.Errorf("a bad URL's answer: %v", a)
		}
	}
}

// A form request is declined with a clear reason and never filled in, under every
// revision: the server gets decline with the reason in _meta, and an audit record says so.
// The test server's form asks for a password: it is flagged as asking for a secret.
func TestFormRequestDeclined(t *testing.T) {
	eachVariant(t, func(t *testing.T, v variant) {
		f := newFixtureAs(t, nil, true, v)
		r, _, _ := f.callAnswering("form", nil)
		wantOutput(t, "form", r, "echo", "echo: decline")
		as := f.answers()
		if len(as) != 1 {
			t.Fatalf("answers: %v", as)
		}
		if meta, _ := as[0]["_meta"].(map[string]any); meta[toolserver.ReasonMeta] != toolserver.ReasonFormSecret+" (flagged)" {
			t.Errorf("the decline gives no reason: %v", as[0])
		}
		if !inputAudited(t, f, toolserver.AnswerDecline, "") {
			t.Error("no audit record of the declined form request")
		}
	})
}

// A URL request that comes with no call (under the older revisions a server may send one at
// any time) is asked of nobody: the person opening a page must be the one whose call asked.
// It is declined with the reason.
func TestURLRequestWithoutACallDeclined(t *testing.T) {
	f := newFixtureAs(t, nil, true, variants[1]) // 2025-11-25 over stdio
	wantOutput(t, "echo", f.approvedCall("echo", `{"text":"hi"}`), "echo", "echo: hi")
	f.setControl("ask")
	f.eventually("the server's unprompted request is answered", func() bool { return len(f.answers()) == 1 })
	a := f.answers()[0]
	if meta, _ := a["_meta"].(map[string]any); a["action"] != "decline" || meta[toolserver.ReasonMeta] != toolserver.ReasonNoCall {
		t.Errorf("the answer to a request of no call: %v", a)
	}
	cs, err := f.g.Store.ListConsents(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Kind == toolserver.KindURL {
			t.Errorf("a request of no call was shown to the person: %s", c.Payload)
		}
	}
}

// One URL request of a server waits for the person at a time: a second, from another call,
// is declined at once with the reason, and the first is still answered by the person.
func TestOneURLRequestAtATime(t *testing.T) {
	f := newFixtureAs(t, nil, true, variants[0])
	first := make(chan ipc.Response, 1)
	var firstID string
	approveCall := gatewaytest.AnswerNext(t, f.g.Store, consent.KindCall, func(ctx context.Context, id string) error {
		return f.g.Consent.Approve(ctx, id, "person", false)
	})
	go func() { first <- f.call("echo", `{"text":"url:https://login.example.com/a"}`) }()
	<-approveCall
	firstID = gatewaytest.WaitPending(t, f.g.Store, toolserver.KindURL)

	r, _, _ := f.callAnswering("url:https://login.example.com/b", nil)
	wantOutput(t, "the second URL request", r, "echo", "echo: decline")
	var busy bool
	for _, a := range f.answers() {
		meta, _ := a["_meta"].(map[string]any)
		busy = busy || meta[toolserver.ReasonMeta] == toolserver.ReasonBusy
	}
	if !busy {
		t.Errorf("the second URL request was not declined as one too many: %v", f.answers())
	}
	if err := f.g.Consent.Approve(f.ctx, firstID, "person", false); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, "the first URL request", <-first, "echo", "echo: accept")
}

// A URL request the person leaves unanswered while the call runs out is withdrawn from the
// approval page (cancelled), so that nobody approves what no call waits for, and audited as
// cancel; the call ends as a timeout.
func TestUnansweredURLRequestWithdrawn(t *testing.T) {
	v := variants[0]
	v.ceiling = 2 * time.Second
	f := newFixtureAs(t, nil, true, v)
	r, _, _ := f.callAnswering("url:https://login.example.com/", nil)
	wantCode(t, "an unanswered URL request", r, "TIMEOUT")
	var id string
	f.eventually("the URL request is withdrawn", func() bool {
		cs, _ := f.g.Store.ListConsents(f.ctx, "")
		for _, c := range cs {
			if c.Kind == toolserver.KindURL && c.State == store.ConsentCancelled {
				id = c.ID
				return true
			}
		}
		return false
	})
	f.eventually("the withdrawn request is audited", func() bool { return inputAudited(t, f, toolserver.AnswerCancel, id) })
}

// The same server lists the same definitions, and so the same pins, whichever revision
// capgate speaks to it and over which transport: a server capgate moves to 2026-07-28 (or
// back) keeps every tool pinned, and none stops for the move.
func TestSameHashesUnderEveryRevision(t *testing.T) {
	box := sandboxtest.Open(t)
	control := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(control, []byte("hostile"), 0o600); err != nil {
		t.Fatal(err)
	}
	var first map[string]string
	for _, v := range variants {
		args := []string{"-control", control, "-revisions", v.revisions}
		c := toolserver.Config{Name: "srv", Command: testServer, Args: args, Bind: []toolserver.Bind{{Path: filepath.Dir(control)}}}
		if v.http {
			url, _ := startHTTPServer(t, args)
			c = toolserver.Config{Name: "srv", URL: url}
		}
		s, err := toolserver.Connect(context.Background(), c, box, "test", nil)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if got := toolserver.RevisionOf(s, time.Now()).Protocol; got != v.want {
			t.Errorf("%s: spoke %s", v.name, got)
		}
		tools, _, err := toolserver.List(context.Background(), s)
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		hashes := map[string]string{}
		for _, tool := range tools {
			canon, err := toolserver.DefinitionOf(tool).Canonical()
			if err != nil {
				t.Fatal(err)
			}
			hashes[tool.Name] = toolserver.Hash(canon)
		}
		if len(hashes) != 3 {
			t.Fatalf("%s: listed %v", v.name, hashes)
		}
		if first == nil {
			first = hashes
		} else if !maps.Equal(first, hashes) {
			t.Errorf("%s lists other definitions than %s:\n%v\n%v", v.name, variants[0].name, hashes, first)
		}
	}
}
