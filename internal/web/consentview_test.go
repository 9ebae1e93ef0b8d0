package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

// tokenAsk is the token request the person must be able to read in full: fs.write with
// 1000 uses for 700 hours, with paths, commands and a CEL condition.
var tokenAsk = map[string]any{
	"capabilities": []string{"fs.write"}, "duration": 700 * 3600, "max_uses": 1000, "reason": "tidy the workspace",
	"constraints": map[string]any{"allowed_paths": []string{"/srv/ws/**"}, "allowed_commands": []string{"ls", "git status"},
		"denied_commands": []string{"rm"}, "denied_patterns": []string{"rm -rf"}, "condition": `params.path.startsWith("/srv/ws/")`},
}

// tokenWords are what the page says of tokenAsk, as HTML.
var tokenWords = []string{
	"at most 1000 uses", "29 days 4 h, until ",
	"<li>only these paths: /srv/ws/**</li>", "<li>only these commands: ls, git status</li>", "<li>never these commands: rm</li>",
	"<li>never commands matching: rm -rf</li>", "<li>only when this CEL condition holds: params.path.startsWith(&#34;/srv/ws/&#34;)</li>",
	`<span class="badge revocable">revocable</span>`, consent.UndoRevoke,
}

// jsonRequest is one request of /ui/requests.json, the members these tests read.
type jsonRequest struct {
	ID           string   `json:"id"`
	Token        bool     `json:"token"`
	Uses         string   `json:"uses"`
	Lifetime     string   `json:"lifetime"`
	Constraints  []string `json:"constraints"`
	Revocable    bool     `json:"revocable"`
	Irreversible bool     `json:"irreversible"`
	Undo         string   `json:"undo"`
	Reason       string   `json:"reason"`
	Difference   []struct{ Sign, Text string }
	Lookalikes   []struct {
		Field string
		Flags []string
		Shown []string
	}
}

// listed returns the request id of /ui/requests.json.
func (b *browser) listed(id string) jsonRequest {
	b.t.Helper()
	_, body := b.get("/ui/requests.json")
	var list struct{ Requests []jsonRequest }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		b.t.Fatalf("requests.json: %v", err)
	}
	for _, r := range list.Requests {
		if r.ID == id {
			return r
		}
	}
	b.t.Fatalf("requests.json does not list %s", id)
	return jsonRequest{}
}

// A token request shows what the token would be: its uses, how long it lasts and until
// when, every constraint in words (the CEL condition as text), and that it can be revoked;
// never "cannot be undone" or an irreversible badge. The date shown is the token's own.
func TestTokenRequestShowsWhatIsGranted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	alice := e.addClient("alice")
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())

	var ans struct {
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expires_at"`
	}
	done := make(chan int, 1)
	go func() { done <- e.api(alice, "/v1/capabilities/request", tokenAsk, &ans) }()
	id := e.waitPending(consent.KindToken)
	_, one := b.get("/ui/requests/" + id)
	_, list := b.get("/ui/requests")
	for name, page := range map[string]string{"request page": one, "list": list} {
		for _, want := range tokenWords {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		for _, bad := range []string{"cannot be undone", `badge irrev`, ">Undo</dd>"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s says %q of a token", name, bad)
			}
		}
	}
	j := b.listed(id)
	if !j.Token || j.Uses != "at most 1000 uses" || !strings.HasPrefix(j.Lifetime, "29 days 4 h, until ") || len(j.Constraints) != 5 ||
		!j.Revocable || j.Irreversible || j.Undo != consent.UndoRevoke {
		t.Errorf("requests.json: %+v", j)
	}

	b.answer(id, "approve", csrf, nil)
	if st := <-done; st != http.StatusOK || ans.Token == "" {
		t.Fatalf("the approved token: HTTP %d", st)
	}
	if until := "until " + consent.ShowDate(time.Unix(ans.ExpiresAt, 0)); !strings.Contains(one, until) {
		t.Errorf("the page said another expiry than the token's %q", until)
	}
}

// Each request says truthfully whether it can be undone: a read has nothing to undo and no
// irreversible badge, a reversible write says how long it can be undone (never "Undo:
// Undo"), a network send cannot be undone and says so.
func TestUndoSaysWhatIsTrue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	alice := e.addClient("alice")
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())

	for _, c := range []struct {
		method, params string
		want, bad      []string
	}{
		{"review", `{}`, []string{`<dd class="undo">nothing to undo: it only reads</dd>`}, []string{"irreversible", "cannot be undone"}},
		{"write", `{"id":"1","text":"milk"}`, []string{`<dd class="undo">can be undone within 1 min after it runs</dd>`},
			[]string{"irreversible", "cannot be undone", ">Undo<"}},
		{"send", `{"to":"bob"}`, []string{`<dd class="undo">cannot be undone</dd>`, `<span class="badge irrev">irreversible</span>`}, []string{">Undo<"}},
	} {
		done := e.callAsync(alice, c.method, c.params, "")
		id := e.waitPending(consent.KindCall)
		_, page := b.get("/ui/requests/" + id)
		card := page[strings.Index(page, `<article`):strings.Index(page, `</article>`)]
		for _, w := range c.want {
			if !strings.Contains(card, w) {
				t.Errorf("%s lacks %q", c.method, w)
			}
		}
		for _, w := range c.bad {
			if strings.Contains(card, w) {
				t.Errorf("%s says %q", c.method, w)
			}
		}
		if err := e.g.Consent.Deny(e.ctx, id, "test"); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}

// longMinutes is a duration said in minutes where hours or days belong: "1439 min 56 s".
var longMinutes = regexp.MustCompile(`\d{3,} min`)

// A request that waits a day (a tool server's pin request) says its time left as "1 day",
// never "1439 min 56 s".
func TestDurationsReadNaturally(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	id := putPin(t, e, consent.Request{ClientID: "capgate:toolserver", ClientName: "capgate (tool server srv)", Kind: "pin",
		Summary: "The MCP tool server \"srv\" changed the tool \"echo\".", Reversibility: consent.Irreversible, SideEffects: "system",
		Difference: []string{`- /description: "Echoes the text back."`, `+ /description: "Echoes <b>back</b>."`}}, 24*time.Hour)
	_, page := b.get("/ui/requests/" + id)
	if !strings.Contains(page, `class="countdown" data-until=`) || !strings.Contains(page, ">1 day</dd>") {
		t.Errorf("a day left is not said as a day:\n%s", page)
	}
	if m := longMinutes.FindString(page); m != "" {
		t.Errorf("the page says %q", m)
	}
}

// putPin records a pin request as the tool server does (straight into the store, expiring
// after ttl) and returns its id.
func putPin(t *testing.T, e *env, r consent.Request, ttl time.Duration) string {
	t.Helper()
	id := "req_" + strings.Repeat("0", 23) + "1"
	raw, _ := json.Marshal(r)
	now := time.Now()
	if err := e.g.Store.PutConsent(e.ctx, store.Consent{ID: id, ClientID: r.ClientID, Kind: "pin", Payload: raw,
		State: store.ConsentPending, Created: now, Expires: now.Add(ttl)}); err != nil {
		t.Fatal(err)
	}
	return id
}

// A tool server's change is shown as the difference it is, in a section of its own, the
// JSON as the server wrote it (markup as text, never \u003c escapes): never as a "reason
// given". The summary says "offers a new tool", not "offers a new the tool".
func TestPinRequestShowsTheDifference(t *testing.T) {
	t.Parallel()
	e, control := toolEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	setControl(t, control, "mutate,hostile")
	rs := e.pinRequests(2)
	echo, evil := request(t, rs, "echo"), request(t, rs, hostileTool)

	_, page := b.get("/ui/requests/" + evil.ConsentID)
	for _, want := range []string{`<details class="diff" open><summary>What changed (- pinned, + now)</summary>`,
		`<li class="add"><code>&#43; /title: &#34;\&#34;&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;&#34;</code></li>`,
		"offers a new tool &#34;&lt;img"} {
		if !strings.Contains(page, want) {
			t.Errorf("the new tool's request lacks %q\n%s", want, page)
		}
	}
	for _, bad := range []string{`\u003c`, `\u003e`, "Reason given", "a new the tool", "<script>window", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the new tool's request holds %q", bad)
		}
	}
	_, page = b.get("/ui/requests/" + echo.ConsentID)
	if !strings.Contains(page, `<li class="del"><code>- /description: &#34;Echoes the text back.&#34;</code></li>`) ||
		!strings.Contains(page, "changed the tool &#34;echo&#34;") || strings.Contains(page, "Reason given") {
		t.Errorf("the changed tool's request does not show its difference as one")
	}
	if m := longMinutes.FindString(page); m != "" {
		t.Errorf("the pin request says %q", m)
	}
	j := b.listed(evil.ConsentID)
	if j.Reason != "" || len(j.Difference) == 0 || j.Difference[0].Sign != "+" {
		t.Errorf("requests.json: reason %q, difference %+v", j.Reason, j.Difference)
	}
}

// Look-alike characters are flagged wherever the agent wrote them: in the client's name,
// the summary, the reason and the audit tag, as well as in the params; each is named, its
// word shown with the letters that are not what they seem escaped, and the card carries a
// badge. A clean request carries none.
func TestLookalikesFlaggedEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	c, err := e.g.Consent.Ask(e.ctx, consent.Request{ClientID: "cl_x", ClientName: "Reseаrch assistant", Kind: consent.KindCall,
		Permission: "app.pad.write", Summary: "Write a nоte", Reason: "log in to pаypal\u200b first", AuditTag: "ｔidy",
		Params: []byte(`{"text":"see https://exаmple.com"}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/ui/requests/" + c.ID)
	for _, want := range []string{
		`<span class="badge lookalike">look-alike characters</span>`,
		`<span class="field">Client name</span>: letters from more than one script in one word: Latin, Cyrillic <code class="escaped">Rese\u0430rch</code>`,
		`<span class="field">Summary</span>: letters from more than one script in one word: Latin, Cyrillic <code class="escaped">n\u043ete</code>`,
		`<span class="field">Reason given</span>: invisible characters; letters from more than one script in one word: Latin, Cyrillic <code class="escaped">p\u0430ypal\u200b</code>`,
		`<span class="field">Audit tag</span>: ` + consent.FlagForms + ` <code class="escaped">\uff54idy</code>`,
		`<span class="field">params.text</span>: letters from more than one script in one word: Latin, Cyrillic <code class="escaped">ex\u0430mple</code>`,
		`log in to pаypal\u200b first`, // the reason itself, its zero-width space revealed
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	j := b.listed(c.ID)
	if len(j.Lookalikes) != 5 || j.Lookalikes[2].Field != "Reason given" {
		t.Errorf("requests.json look-alikes: %+v", j.Lookalikes)
	}

	clean, err := e.g.Consent.Ask(e.ctx, consent.Request{ClientID: "cl_x", ClientName: "Assistant de recherche", Kind: consent.KindCall,
		Permission: "app.pad.write", Summary: "Écrire une note", Reason: "noter la réunion de lundi — 5 m² de tableau"})
	if err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/ui/requests/" + clean.ID); strings.Contains(page, "look-alike") || strings.Contains(page, `class="lookalikes"`) {
		t.Errorf("a clean French request is flagged")
	}
}
