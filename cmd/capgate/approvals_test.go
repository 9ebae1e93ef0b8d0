package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// approvals list and show point to the request's own page on the approval page when the
// gateway's address is known (--server, else $CAPGATE_SERVER), and to none when it is not.
func TestApprovalsPrintThePage(t *testing.T) {
	data := t.TempDir()
	ctx, st := aliceStore(t, data)
	c, err := consent.New(st, &consent.Options{Surface: true}).Ask(ctx, consent.Request{ClientID: "cl_alice", ClientName: "alice",
		Kind: consent.KindCall, Permission: "app.notes.write", Summary: "Write a note"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := "http://127.0.0.1:7766/ui/requests/" + c.ID

	r := capgate(t, "", nil, "approvals", "list", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, c.ID) || strings.Contains(r.stdout, "/ui/requests/") {
		t.Errorf("list with no gateway address:\n%s", r.stdout)
	}
	for _, how := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--server", "http://127.0.0.1:7766/"}},
		{[]string{"CAPGATE_SERVER=http://127.0.0.1:7766"}, nil},
	} {
		r := capgate(t, "", how.env, append([]string{"approvals", "list", "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		if !strings.Contains(r.stdout, "answer at "+page+"\n") {
			t.Errorf("list %v %v does not print the page:\n%s", how.env, how.args, r.stdout)
		}
		r = capgate(t, "", how.env, append([]string{"approvals", "list", "--json", "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		var list []struct{ ID, URL string }
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].URL != page {
			t.Errorf("list --json: %s (%v)", r.stdout, err)
		}
		r = capgate(t, "", how.env, append([]string{"approvals", "show", c.ID, "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		var one struct{ URL string }
		if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || one.URL != page {
			t.Errorf("show: %s (%v)", r.stdout, err)
		}
	}
	r = capgate(t, "", nil, "approvals", "show", c.ID, "--data", data)
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, "/ui/requests/") {
		t.Errorf("show with no gateway address names a page:\n%s", r.stdout)
	}
	// The JSON of list and show: snake_case members, what the person decides on under
	// details, never the stored payload's bytes.
	var shown map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	l := capgate(t, "", nil, "approvals", "list", "--json", "--data", data)
	var listed []map[string]any
	if err := json.Unmarshal([]byte(l.stdout), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("list --json: %s (%v)", l.stdout, err)
	}
	for what, v := range map[string]map[string]any{"show": shown, "list --json": listed[0]} {
		d, _ := v["details"].(map[string]any)
		if v["id"] != c.ID || v["kind"] != "call" || v["state"] != "pending" || v["client_id"] != "cl_alice" ||
			v["expires"] == nil || v["created"] == nil || d == nil || d["permission"] != "app.notes.write" || d["summary"] != "Write a note" {
			t.Errorf("%s: %v", what, v)
		}
		for _, k := range []string{"ID", "Payload", "payload", "answered"} {
			if _, ok := v[k]; ok {
				t.Errorf("%s has a member %q: %v", what, k, v)
			}
		}
	}
	for _, bad := range []string{"127.0.0.1:7766", "ftp://127.0.0.1", "http://"} {
		mustCode(t, capgate(t, "", nil, "approvals", "list", "--data", data, "--server", bad), 2)
	}
}

// What the person or operator changes from the command line directly in the store (adding a
// client, answering consent requests, revoking a token) is in the audit log, a decision before the change and
// its outcome after, on the same chain: audit verify passes. A request or token that does not
// exist leaves no record.
func TestOperatorChangesAreAudited(t *testing.T) {
	data := t.TempDir()
	mustCode(t, capgate(t, "", nil, "client", "add", "alice", "--data", data), 0) // creates the store
	if _, err := gateway.LoadOrCreateKey(data); err != nil {                      // as capgate serve does
		t.Fatal(err)
	}
	ctx, st := context.Background(), openSQLite(t, data)
	cs := consent.New(st, &consent.Options{Surface: true})
	ask := func(perm string) string {
		c, err := cs.Ask(ctx, consent.Request{ClientID: "cl_alice", ClientName: "alice", Kind: consent.KindCall, Permission: perm, Summary: "Write", Wording: "alice may write notes"})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	approved, denied := ask("app.notes.write"), ask("app.notes.delete")
	now := time.Now()
	if err := st.PutToken(ctx, store.Token{ID: "tok_operator", ClientID: "cl_alice", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	mustCode(t, capgate(t, "", nil, "approvals", "approve", approved, "--remember", "--data", data), 0)
	r := capgate(t, "", nil, "approvals", "deny", denied, "--json", "--data", data)
	mustCode(t, r, 0)
	var answered struct {
		ID, State  string
		AnsweredBy string `json:"answered_by"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &answered); err != nil || answered.ID != denied || answered.State != "denied" ||
		!strings.HasPrefix(answered.AnsweredBy, "cli") || !strings.Contains(r.stdout, `"answered":`) {
		t.Errorf("deny --json: %s (%v)", r.stdout, err)
	}
	mustCode(t, capgate(t, "", nil, "approvals", "approve", "req_000000000000000000000000", "--data", data), 1)
	mustCode(t, capgate(t, "", nil, "token", "revoke", "tok_operator", "--data", data), 0)
	mustCode(t, capgate(t, "", nil, "token", "revoke", "tok_nosuch", "--data", data), 1)
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)

	var got []string
	for _, r := range auditRecords(t, data) {
		if !strings.HasPrefix(r.ClientID, "cli") {
			t.Errorf("%s names %q, not the operator", r.Action, r.ClientID)
		}
		got = append(got, strings.Join([]string{r.Action, r.Kind, r.Result, r.Code, r.ConsentID, r.Permission, r.TokenID}, "|"))
		if r.Action == "consent.approve" && !strings.Contains(r.Explanation, "act_if_agreed") {
			t.Errorf("the remembered approval does not say so: %s", r.Explanation)
		}
	}
	want := []string{
		"client.add|decision|add requested||||", "client.add|outcome|success||||",
		"consent.approve|decision|approve requested||" + approved + "|app.notes.write|",
		"consent.approve|outcome|success||" + approved + "|app.notes.write|",
		"consent.deny|decision|deny requested||" + denied + "|app.notes.delete|",
		"consent.deny|outcome|success||" + denied + "|app.notes.delete|",
		"token.revoke|decision|revoke requested||||tok_operator",
		"token.revoke|outcome|success||||tok_operator",
		"token.revoke|decision|revoke requested||||tok_nosuch",
		"token.revoke|outcome|error|INVALID_TOKEN|||tok_nosuch",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st = openSQLite(t, data)
	defer st.Close()
	if m, err := st.GetMandate(ctx, "app.notes.write"); err != nil || m.AgreedID != approved {
		t.Errorf("the remembered agreement: %+v %v", m, err)
	}
}

// auditRecords are the records of the data folder's audit log, oldest first.
func auditRecords(t *testing.T, data string) []audit.Record {
	t.Helper()
	st := openSQLite(t, data)
	defer st.Close()
	return gatewaytest.AuditRecords(t, st)
}

// recordsOf is the records of action in the data folder's audit log, oldest first, each as
// line puts it, joined by spaces.
func recordsOf(t *testing.T, data, action string, line func(audit.Record) string) string {
	t.Helper()
	var out []string
	for _, rec := range auditRecords(t, data) {
		if rec.Action == action {
			out = append(out, line(rec))
		}
	}
	return strings.Join(out, " ")
}

// openSQLite opens the data folder's SQLite store, as the gateway does.
func openSQLite(t *testing.T, data string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(data, gateway.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// aliceStore makes the data folder's store by adding the client alice, as the person does,
// and opens it.
func aliceStore(t *testing.T, data string) (context.Context, *sqlite.Store) {
	t.Helper()
	mustCode(t, capgate(t, "", nil, "client", "add", "alice", "--data", data), 0)
	return context.Background(), openSQLite(t, data)
}

// approvals list --json and show say what a token request grants, under details beside the
// request's own members: uses, expires_at, lifetime, constraints in words, revocable, undo,
// and the look-alike characters of the reason; the text list says it too.
func TestApprovalsShowWhatIsGranted(t *testing.T) {
	data := t.TempDir()
	ctx, st := aliceStore(t, data)
	expires := time.Now().Add(700 * time.Hour).UTC().Truncate(time.Second)
	c, err := consent.New(st, &consent.Options{Surface: true}).Ask(ctx, consent.Request{ClientID: "cl_alice", ClientName: "alice",
		Kind: consent.KindToken, Grants: []string{"fs.write"}, Summary: "issue a capability token", Reason: "log in to pаypal", Risk: "high",
		Token: &consent.TokenTerms{ExpiresAt: expires, Lifetime: 700 * 3600, MaxUses: 1000, AllowedPaths: []string{"/srv/ws/**"},
			DeniedCommands: []string{"rm"}, Condition: `params.path.startsWith("/srv/ws/")`}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	type details struct {
		Kind, Reversibility, Reason string
		Grants                      []string
		Token                       struct {
			MaxUses  int64 `json:"max_uses"`
			Lifetime int64 `json:"lifetime_s"`
		}
		Uses, Lifetime, Undo    string
		ExpiresAt               time.Time `json:"expires_at"`
		Constraints             []string
		Revocable, Irreversible bool
		Lookalikes              []consent.Lookalike
	}
	l := capgate(t, "", nil, "approvals", "list", "--json", "--data", data)
	mustCode(t, l, 0)
	var list []struct{ Details details }
	if err := json.Unmarshal([]byte(l.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("list --json: %s (%v)", l.stdout, err)
	}
	s := capgate(t, "", nil, "approvals", "show", c.ID, "--data", data)
	mustCode(t, s, 0)
	var one struct{ Details details }
	if err := json.Unmarshal([]byte(s.stdout), &one); err != nil {
		t.Fatalf("show: %s (%v)", s.stdout, err)
	}
	wantConstraints := []string{"only these paths: /srv/ws/**", "never these commands: rm", `only when this CEL condition holds: params.path.startsWith("/srv/ws/")`}
	for what, d := range map[string]details{"list --json": list[0].Details, "show": one.Details} {
		if d.Kind != "token" || d.Reversibility != consent.Revocable || d.Reason != "log in to pаypal" || len(d.Grants) != 1 ||
			d.Token.MaxUses != 1000 || d.Token.Lifetime != 700*3600 {
			t.Errorf("%s: the request's own members: %+v", what, d)
		}
		if d.Uses != "at most 1000 uses" || d.Lifetime != "29 days 4 h" || !d.ExpiresAt.Equal(expires) ||
			strings.Join(d.Constraints, "|") != strings.Join(wantConstraints, "|") || !d.Revocable || d.Irreversible || d.Undo != consent.UndoRevoke {
			t.Errorf("%s: the words: %+v", what, d)
		}
		if len(d.Lookalikes) != 1 || d.Lookalikes[0].Field != "reason" || d.Lookalikes[0].Shown[0] != `p\u0430ypal` {
			t.Errorf("%s: look-alikes %+v", what, d.Lookalikes)
		}
	}
	txt := capgate(t, "", nil, "approvals", "list", "--data", data)
	mustCode(t, txt, 0)
	for _, want := range []string{"the token: at most 1000 uses; lasts 29 days 4 h, until " + consent.ShowDate(expires), "never these commands: rm",
		"look-alike characters in reason", consent.UndoRevoke} {
		if !strings.Contains(txt.stdout, want) {
			t.Errorf("approvals list lacks %q:\n%s", want, txt.stdout)
		}
	}
	if !regexp.MustCompile(`expires in (5 min|4 min \d+ s) \(`).MatchString(txt.stdout) {
		t.Errorf("approvals list does not say the request's expiry in plain words:\n%s", txt.stdout)
	}
	if strings.Contains(txt.stdout, "cannot be undone") {
		t.Errorf("approvals list says a token cannot be undone:\n%s", txt.stdout)
	}
}
