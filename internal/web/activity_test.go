package web_test

import (
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

var entryID = regexp.MustCompile(`id="a-(\d+)"`)

// seqs are the record numbers an activity page lists, in order.
func seqs(page string) []string {
	var out []string
	for _, m := range entryID.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// The activity page lists the audit log newest first, 50 a page, filtered by client, app,
// decision and time (validated); every field is text, params only as their hash; at the top
// it says what audit verify found: intact with its checkpoint, or what is wrong.
func TestActivity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.addClient("alice")
	alice, err := e.g.Store.ClientByName(e.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	if resp, body := b.get("/ui/activity"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, `id="verify"`) {
		t.Errorf("activity without a session: HTTP %d", resp.StatusCode)
	}
	b.login(e.g.LoginLink())

	// 120 records, one a minute from base: every third a deny for app "mail" by alice, the
	// rest allows for "pad" by cl_other; record 7 carries hostile text.
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hash := "sha256:" + strings.Repeat("0f", 32)
	for i := range 120 {
		r := audit.Record{Timestamp: base.Add(time.Duration(i) * time.Minute).Unix(), Action: "execute", App: "pad", Method: "write",
			Capability: "notes.org.example.pad.write", Permission: "app.pad.write", ParamsHash: hash, Decision: "allow", Kind: "decision",
			ClientID: "cl_other", CallID: fmt.Sprintf("call_%03d", i), AuditTag: "weekly notes"}
		if i%3 == 0 {
			r.App, r.Decision, r.Code, r.ClientID, r.Result = "mail", "deny", "CAPABILITY_DENIED", alice.ID, "refused"
		}
		if i == 7 {
			r.AuditTag = hostileTag
			r.Explanation = "because \"><img src=x onerror=alert(1)> said so\u202e"
		}
		if _, err := e.g.Audit.Append(e.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	head, err := e.g.Store.AuditHead(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := head.Seq
	// A checkpoint signed with the gateway's key, as the writer signs them.
	if err := e.g.Store.PutCheckpoint(e.ctx, audit.SignCheckpoint(e.g.Key, head.Seq, head.Hash, time.Now())); err != nil {
		t.Fatal(err)
	}

	_, page := b.get("/ui/activity")
	if want := fmt.Sprintf("intact: %d records, last checkpoint at seq %d", total, total); !strings.Contains(page, want) || !strings.Contains(page, "verify-ok") {
		t.Errorf("the page does not say %q", want)
	}
	got := seqs(page)
	if len(got) != 50 || got[0] != fmt.Sprint(total) || got[49] != fmt.Sprint(total-49) {
		t.Errorf("first page lists %d records %v, want the newest 50", len(got), got)
	}
	for _, want := range []string{"call_119", hash, "notes.org.example.pad.write", "CAPABILITY_DENIED", "refused", "weekly notes",
		`<a href="/ui/requests">Requests</a>`, `<a href="/ui/tokens">Tokens</a>`, `aria-current="page">Activity</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the activity page lacks %q", want)
		}
	}
	older := regexp.MustCompile(`id="older" href="/ui/activity\?([^"]+)"`).FindStringSubmatch(page)
	if older == nil {
		t.Fatal("no link to older records")
	}
	_, page2 := b.get("/ui/activity?" + strings.ReplaceAll(older[1], "&amp;", "&"))
	if got := seqs(page2); len(got) != 50 || got[0] != fmt.Sprint(total-50) {
		t.Errorf("second page lists %v", got)
	}

	// The older link keeps the filter.
	_, page = b.get("/ui/activity?app=pad&decision=allow")
	older = regexp.MustCompile(`id="older" href="/ui/activity\?([^"]+)"`).FindStringSubmatch(page)
	if older == nil {
		t.Fatal("no link to older allowed pad records")
	}
	if _, page2 := b.get("/ui/activity?" + strings.ReplaceAll(older[1], "&amp;", "&")); len(seqs(page2)) != 30 || strings.Contains(page2, "CAPABILITY_DENIED") {
		t.Errorf("the older page of a filter lists %d records, want 30 allows", len(seqs(page2)))
	}

	// The hostile record, reached by its time, is text.
	_, page = b.get("/ui/activity?from=2026-03-01T12:07&to=2026-03-01T12:07")
	if got := seqs(page); len(got) != 1 {
		t.Fatalf("time range 12:07 to 12:07 lists %v", got)
	}
	for _, bad := range []string{"<script>window", "<img", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the activity page holds %q", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;window.__pwned=1&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt; said so\\u202e"} {
		if !strings.Contains(page, good) {
			t.Errorf("the activity page lacks %q", good)
		}
	}

	// Filters.
	for _, c := range []struct {
		query string
		n     int
		want  string // in every listed record's text, when set
	}{
		{"decision=deny", 40, "CAPABILITY_DENIED"},
		{"client=" + alice.ID, 40, "CAPABILITY_DENIED"},
		{"app=pad&decision=allow", 50, ""},
		{"app=mail&from=2026-03-01T12:00&to=2026-03-01T12:29", 10, "CAPABILITY_DENIED"},
		{"from=2026-03-01T13:50", 10, ""},
		{"to=2026-02-28", 0, ""},
		{"app=nothing", 0, ""},
		{"decision=deny&client=cl_other", 0, ""},
	} {
		_, page := b.get("/ui/activity?" + c.query)
		got := seqs(page)
		if len(got) != c.n {
			t.Errorf("%s: %d records, want %d", c.query, len(got), c.n)
		}
		if c.want != "" && strings.Count(page, c.want) != c.n {
			t.Errorf("%s: %d records say %s, want %d", c.query, strings.Count(page, c.want), c.want, c.n)
		}
	}
	for _, q := range []string{"decision=maybe", "from=yesterday", "to=2026-13-01", "before=abc", "before=-1",
		"from=2026-03-02&to=2026-03-01", "app=" + strings.Repeat("a", 2000), "client=%E2%80%AE"} {
		resp, body := b.get("/ui/activity?" + q)
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(body, "yesterday") {
			t.Errorf("%s: HTTP %d, want 400", q, resp.StatusCode)
		}
	}

	// A checkpoint that does not verify, and an entry whose hash is wrong: the page says so.
	_, other, _ := ed25519.GenerateKey(nil)
	if err := e.g.Store.PutCheckpoint(e.ctx, audit.SignCheckpoint(other, head.Seq-1, "sha256:"+strings.Repeat("00", 32), time.Now())); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"action":"execute","app":"pad","audit_tag":"","call_id":"","capability":"","client_id":"x","code":"","consent_id":"",` +
		`"decision":"allow","duration_ms":0,"explanation":"","kind":"decision","method":"","params_hash":"","permission":"","result":"",` +
		`"timestamp":1772366400,"token_id":""}`)
	if err := e.g.Store.AppendAudit(e.ctx, []store.AuditEntry{{Seq: total + 1, PrevHash: head.Hash, Hash: "sha256:" + strings.Repeat("11", 32), At: time.Now(), Body: body}}); err != nil {
		t.Fatal(err)
	}
	_, page = b.get("/ui/activity")
	for _, want := range []string{"NOT intact: 2 problem(s) in " + fmt.Sprint(total+1) + " records (last checkpoint at seq " + fmt.Sprint(total) + ")",
		"verify-bad", fmt.Sprintf("seq %d: hash does not match", total+1), "checkpoint: ", "after the last signed checkpoint"} {
		if !strings.Contains(page, want) {
			t.Errorf("the tampered log's page lacks %q", want)
		}
	}
}

// undoButton finds the call ids the activity page offers to undo, newest first.
var undoButton = regexp.MustCompile(`name="call" value="(call_[0-9a-f]+)"><button class="undo-call"`)

func undoable(page string) []string {
	var out []string
	for _, m := range undoButton.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// approvedWrite writes a note as the client with key, the person approving the call, and
// wants it to succeed with an undo token.
func (e *env) approvedWrite(key, id, text string) {
	e.t.Helper()
	done := e.callAsync(key, "write", `{"id":"`+id+`","text":"`+text+`"}`, "")
	if err := e.g.Consent.Approve(e.ctx, e.waitPending(consent.KindCall), "test", false); err != nil {
		e.t.Fatal(err)
	}
	if r := <-done; r.Body.Status != "success" || r.Body.UndoToken == "" {
		e.t.Fatalf("write %s: %+v", id, r.Body)
	}
}

// A call whose undo window is open is offered for undo on the activity page; undoing it
// there reverts the app's state through the broker, spends the undo token, and is recorded
// as the person's; an undone call, an unknown one or a form without the CSRF token undoes
// nothing.
func TestActivityUndo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	alice := e.addClient("alice")
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	e.approvedWrite(alice, "1", "milk")
	e.approvedWrite(alice, "2", "bread")

	_, page := b.get("/ui/activity")
	calls := undoable(page)
	if len(calls) != 2 || !strings.Contains(page, "Can be undone for") {
		t.Fatalf("the activity page offers to undo %v, want the two writes", calls)
	}
	first := calls[1] // newest first: the milk
	for _, c := range []struct {
		form url.Values
		want int
	}{
		{url.Values{"call": {first}}, http.StatusForbidden},
		{url.Values{"csrf": {csrf}, "call": {"call_000000000000000000000000"}}, http.StatusConflict},
		{url.Values{"csrf": {csrf}}, http.StatusBadRequest},
	} {
		if resp, _ := b.postForm("/ui/activity/undo", c.form); resp.StatusCode != c.want {
			t.Errorf("undo %v: HTTP %d, want %d", c.form, resp.StatusCode, c.want)
		}
	}
	if e.app.note("1") != "milk" || e.app.count("undo") != 0 {
		t.Fatal("a refused undo undid something")
	}
	if resp, body := b.postForm("/ui/activity/undo", url.Values{"csrf": {csrf}, "call": {first}}); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/activity" {
		t.Fatalf("undo: HTTP %d %s", resp.StatusCode, body)
	}
	if e.app.note("1") != "" || e.app.note("2") != "bread" || e.app.count("undo") != 1 {
		t.Fatalf("after the undo: note 1 %q, note 2 %q, %d undos", e.app.note("1"), e.app.note("2"), e.app.count("undo"))
	}
	if resp, _ := b.postForm("/ui/activity/undo", url.Values{"csrf": {csrf}, "call": {first}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second undo: HTTP %d", resp.StatusCode)
	}
	_, page = b.get("/ui/activity")
	if got := undoable(page); len(got) != 1 || got[0] != calls[0] {
		t.Errorf("after the undo the page offers %v, want only %s", got, calls[0])
	}
	recs := e.auditActions("undo")
	if len(recs) != 2 || recs[0].Kind != "decision" || recs[1].Result != "success" || recs[1].CallID != first ||
		recs[1].ClientID != "person (approval page)" || !strings.Contains(recs[1].Explanation, "client cl_") {
		t.Errorf("the undo's audit records: %+v", recs)
	}
	if !strings.Contains(page, "person (approval page)") || !strings.Contains(page, "undo (decision)") {
		t.Errorf("the activity page does not show the person's undo")
	}
}

// The activity page runs audit verify again only when the log changed: an entry altered in
// place while the head stays shows only once the log grows; a new checkpoint also makes it
// look again.
func TestActivityVerifyCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	rec := func(i int) audit.Record {
		return audit.Record{Action: "execute", App: "pad", Method: "write", Decision: "allow", Kind: "decision", ClientID: "cl_x", CallID: fmt.Sprintf("call_%d", i)}
	}
	for i := range 3 {
		if _, err := e.g.Audit.Append(e.ctx, rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "intact: 3 records") {
		t.Fatal("a fresh log is not intact")
	}
	dbPath := filepath.Join(e.data, gateway.DBFile)
	var body []byte
	setBody := func(b []byte) {
		t.Helper()
		if err := sqlite.RewriteAuditUnsafe(dbPath, func(es []store.AuditEntry) []store.AuditEntry {
			if body == nil {
				body = es[0].Body
			}
			if b != nil {
				es[0].Body = b
			}
			return es
		}); err != nil {
			t.Fatal(err)
		}
	}
	setBody(nil)
	setBody([]byte(strings.Replace(string(body), "call_0", "call_9", 1)))
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "intact: 3 records") {
		t.Error("the verdict was not kept while the log's head stayed the same")
	}
	if _, err := e.g.Audit.Append(e.ctx, rec(3)); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "NOT intact: 1 problem(s) in 4 records") || !strings.Contains(page, "seq 1: hash does not match") {
		t.Error("the grown log was not verified again")
	}
	setBody(body)
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "NOT intact") {
		t.Error("the verdict was not kept while the log's head stayed the same")
	}
	head, err := e.g.Store.AuditHead(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.g.Store.PutCheckpoint(e.ctx, audit.SignCheckpoint(e.g.Key, head.Seq, head.Hash, time.Now())); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "intact: 4 records, last checkpoint at seq 4") {
		t.Error("a new checkpoint did not make the page verify again")
	}
}

// The activity page's verdict holds the log against the head file beside the store, as
// `capgate audit verify` does: the log's last records and checkpoints deleted from the
// database, which the store alone cannot show, make the page say NOT intact.
func TestActivityDeletedTail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	for i := range 4 {
		rec := audit.Record{Action: "execute", App: "pad", Method: "write", Decision: "allow", Kind: "decision", ClientID: "cl_x", CallID: fmt.Sprintf("call_%d", i)}
		if _, err := e.g.Audit.Append(e.ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	head, err := e.g.Store.AuditHead(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/ui/activity"); !strings.Contains(page, "intact: ") || strings.Contains(page, "NOT intact") {
		t.Fatal("a fresh log is not intact")
	}
	// The writer advances the head file off the call path, within audit.DefaultHeadConfirm.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c, err := audit.ReadHeadFile(filepath.Join(e.data, gateway.HeadFile))
		if err == nil && c.Head.Seq >= head.Seq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head file did not reach seq %d: %+v %v", head.Seq, c.Head, err)
		}
	}
	if err := sqlite.RewriteAuditUnsafe(filepath.Join(e.data, gateway.DBFile), func(es []store.AuditEntry) []store.AuditEntry {
		return es[:head.Seq-2]
	}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(e.data, gateway.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM audit_checkpoints WHERE seq > ?`, head.Seq-2); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/ui/activity")
	if !strings.Contains(page, "NOT intact") || !strings.Contains(page, fmt.Sprintf("the log ends at seq %d but the head file holds a head at seq %d", head.Seq-2, head.Seq)) {
		t.Errorf("the cut log's page does not say so")
	}
}
