package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
)

func TestServeEndToEnd(t *testing.T) {
	data := t.TempDir()
	// The gateway trusts the example's key: it registers the notes app (the command goes
	// through it) and serves it at Tier 1.
	url := startServe(t, data, "--trusted-dir", "../../examples/trusted")
	trusted := filepath.Join(t.TempDir(), "trusted")
	if err := os.MkdirAll(trusted, 0o755); err != nil {
		t.Fatal(err)
	}

	r := capgate(t, "", nil, "client", "add", "agent", "--data", data)
	mustCode(t, r, 0)
	key := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(key, "cgk_") || strings.Contains(key, "\n") {
		t.Fatalf("client add printed %q", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "client", "add", "agent", "--data", data), 1)
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}

	// An unknown key is refused.
	req, _ := http.NewRequest("GET", url+"/v1/capabilities", nil)
	req.Header.Set("Authorization", "Bearer cgk_nope")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown key: %v %v", resp, err)
	}

	// Register the example notes manifest (Tier 1 with its trusted key).
	r = capgate(t, "", nil, "app", "register", "../../examples/notes/manifest.json", "--data", data, "--trusted-dir", "../../examples/trusted")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "Tier 1") {
		t.Fatalf("register: %s", r.stdout)
	}
	// The operator's registration is in the audit log, before and after; a manifest that
	// does not parse changes nothing and leaves no record.
	mustCode(t, capgate(t, "", nil, "app", "register", "serve_test.go", "--data", data), 1)
	registered := recordsOf(t, data, "app.register", func(rec audit.Record) string { return rec.Kind + "|" + rec.Result + "|" + rec.App })
	if want := "decision|register requested|org.example.notes outcome|success|org.example.notes"; registered != want {
		t.Errorf("app.register records: %s, want %s", registered, want)
	}
	// The server sees it within its reload interval.
	var caps struct{ Capabilities []struct{ ID string } }
	for i := 0; i < 50; i++ {
		req, _ := http.NewRequest("GET", url+"/v1/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&caps)
		resp.Body.Close()
		if slices.ContainsFunc(caps.Capabilities, func(c struct{ ID string }) bool { return strings.HasPrefix(c.ID, "notes.") }) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.ContainsFunc(caps.Capabilities, func(c struct{ ID string }) bool { return strings.HasPrefix(c.ID, "notes.") }) {
		t.Fatal("the registered app's capabilities are not listed")
	}
	for _, c := range caps.Capabilities {
		if c.ID == "sync.org.example.notes.publish" {
			t.Error("a privileged capability is listed for a user client")
		}
	}

	// A low-risk token needs no consent.
	r = capgate(t, "", env, "token", "request", "--capabilities", "app.notes.read", "--max-uses", "3", "--duration", "10m", "--reason", "find notes")
	mustCode(t, r, 0)
	tok := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(tok, "cgt1.") {
		t.Fatalf("token request printed %q", r.stdout)
	}
	// A command deny-list alone is a convenience, not a bound: token request says so on
	// stderr, naming no entry, and the token still comes on stdout (and so from derive).
	r = capgate(t, "", env, "token", "request", "--capabilities", "app.notes.read", "--duration", "10m", "--constraints", `{"denied_commands":["rm -rf"]}`)
	mustCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "cgt1.") || !strings.Contains(r.stderr, "warning: only a deny-list") || strings.Contains(r.stderr, "rm -rf") {
		t.Errorf("a deny-list alone: stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = capgate(t, "", env, "token", "derive", strings.TrimSpace(r.stdout), "--capabilities", "app.notes.read")
	if mustCode(t, r, 0); !strings.Contains(r.stderr, "warning: only a deny-list") {
		t.Errorf("derive of a deny-listed token: stderr %q", r.stderr)
	}

	// A destructive one waits for the person, who approves it from the CLI.
	got := make(chan result, 1)
	go func() {
		got <- capgate(t, "", env, "token", "request", "--capabilities", "app.notes.delete", "--duration", "10m", "--reason", "tidy up")
	}()
	mustCode(t, capgate(t, "", nil, "approvals", "approve", waitPending(t, data), "--data", data), 0)
	if r := <-got; r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "cgt1.") {
		t.Fatalf("approved token request: %+v", r)
	}

	// The app has no in-process handler in this binary yet: the call is refused as not running,
	// and a call without a covering token is refused before that.
	r = capgate(t, "", env, "call", "notes", "search", "--params", `{"query":"milk"}`, "--token", tok, "--json")
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, `"error_code": "APP_NOT_FOUND"`) {
		t.Fatalf("call: %s", r.stdout)
	}
	r = capgate(t, "", env, "call", "notes", "search", "--params", `{"query":5}`, "--token", tok, "--json")
	if !strings.Contains(r.stdout, `"error_code": "INVALID_REQUEST"`) {
		t.Fatalf("bad params: %s", r.stdout)
	}
	// The client revokes its own token through the gateway; another client cannot.
	other := strings.TrimSpace(capgate(t, "", nil, "client", "add", "other", "--data", data).stdout)
	mustCode(t, capgate(t, "", []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + other}, "token", "revoke", tok), 1)
	mustCode(t, capgate(t, "", env, "token", "revoke", tok), 0)
	r = capgate(t, "", env, "call", "notes", "search", "--params", `{"query":"milk"}`, "--token", tok, "--json")
	if !strings.Contains(r.stdout, `"error_code": "INVALID_TOKEN"`) {
		t.Fatalf("revoked token: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}

// waitPending returns the id of the first pending consent request in the data folder.
func waitPending(t *testing.T, data string) string {
	t.Helper()
	return waitPendingEnv(t, nil, "--data", data)
}

// TestServeSettingsFlow is the README's walk-through with the built-in Settings app: an
// allowed call, a denied call, an approved call, its undo, and an intact audit log.
func TestServeSettingsFlow(t *testing.T) {
	data := t.TempDir()
	url := startServe(t, data)
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--data", data).stdout)
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}

	r := capgate(t, "", env, "token", "request", "--capabilities", "system.settings.read", "--max-uses", "5", "--duration", "10m", "--reason", "check the theme")
	mustCode(t, r, 0)
	read := strings.TrimSpace(r.stdout)
	r = capgate(t, "", env, "call", "settings", "get_setting", "--params", `{"category":"appearance","key":"theme"}`, "--token", read)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, `"value":"dark"`) {
		t.Fatalf("allowed call: %s", r.stdout)
	}
	r = capgate(t, "", env, "call", "settings", "set_setting", "--params", `{"category":"appearance","key":"theme","value":"light"}`, "--token", read, "--json")
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, `"error_code": "CAPABILITY_DENIED"`) {
		t.Fatalf("denied call: %s", r.stdout)
	}

	// Attenuation: a child of the read token with one use works once, its use counts against
	// the parent, a wider child is refused, and revoking the parent revokes the child.
	r = capgate(t, "", env, "token", "derive", read, "--capabilities", "system.settings.read", "--max-uses", "1", "--duration", "5m", "--reason", "one look")
	mustCode(t, r, 0)
	child := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(child, "cgt1.") || strings.Contains(child, "\n") {
		t.Fatalf("token derive printed %q", r.stdout)
	}
	mustCode(t, capgate(t, "", env, "call", "settings", "get_setting", "--params", `{"category":"appearance","key":"theme"}`, "--token", child), 0)
	r = capgate(t, "", env, "call", "settings", "get_setting", "--params", `{"category":"appearance","key":"theme"}`, "--token", child, "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"error_code": "TOKEN_EXHAUSTED"`) {
		t.Fatalf("child's second use: %+v", r)
	}
	for _, wider := range [][]string{{"--capabilities", "system.settings.*"}, {"--capabilities", "system.settings.read", "--max-uses", "9"}, {"--capabilities", "system.settings.read", "--duration", "2h"}} {
		r = capgate(t, "", env, append([]string{"token", "derive", read}, wider...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "INVALID_REQUEST") {
			t.Fatalf("wider child %v: %+v", wider, r)
		}
	}
	r = capgate(t, "", env, "token", "derive", read, "--capabilities", "system.settings.read", "--max-uses", "1")
	mustCode(t, r, 0)
	child2 := strings.TrimSpace(r.stdout)
	other := strings.TrimSpace(capgate(t, "", nil, "client", "add", "other", "--data", data).stdout)
	r = capgate(t, "", []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + other}, "token", "derive", read, "--capabilities", "system.settings.read")
	if r.code != 1 || !strings.Contains(r.stderr, "INVALID_TOKEN") {
		t.Fatalf("derive from another client's token: %+v", r)
	}
	parent := read
	r = capgate(t, "", env, "token", "request", "--capabilities", "system.settings.read", "--max-uses", "5", "--duration", "10m")
	mustCode(t, r, 0)
	read = strings.TrimSpace(r.stdout) // the test goes on with a fresh read token
	mustCode(t, capgate(t, "", env, "token", "revoke", parent), 0)
	r = capgate(t, "", env, "call", "settings", "get_setting", "--params", `{"category":"appearance","key":"theme"}`, "--token", child2, "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"error_code": "INVALID_TOKEN"`) {
		t.Fatalf("child of a revoked parent: %+v", r)
	}

	got := make(chan result, 1)
	go func() {
		got <- capgate(t, "", env, "token", "request", "--capabilities", "system.settings.write", "--max-uses", "2", "--duration", "10m", "--reason", "switch the theme")
	}()
	ar := capgate(t, "", nil, "approvals", "approve", waitPending(t, data), "--data", data)
	mustCode(t, ar, 0)
	if !strings.HasSuffix(strings.TrimSpace(ar.stdout), ": approved") {
		t.Fatalf("approve said %q", ar.stdout)
	}
	w := <-got
	mustCode(t, w, 0)
	write := strings.TrimSpace(w.stdout)
	r = capgate(t, "", env, "call", "settings", "set_setting", "--params", `{"category":"appearance","key":"theme","value":"light"}`, "--token", write, "--json")
	mustCode(t, r, 0)
	var resp struct {
		Body struct {
			Result    struct{ PreviousValue, NewValue string } `json:"result"`
			UndoToken string                                   `json:"undo_token"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil || resp.Body.UndoToken == "" {
		t.Fatalf("approved call: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", env, "undo", resp.Body.UndoToken), 0)
	r = capgate(t, "", env, "call", "settings", "get_setting", "--params", `{"category":"appearance","key":"theme"}`, "--token", read)
	if !strings.Contains(r.stdout, `"value":"dark"`) {
		t.Fatalf("after undo: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", env, "undo", resp.Body.UndoToken), 1)
	r = capgate(t, "", env, "call", "settings", "set_setting", "--params", `{"category":"display","key":"brightness","value":400}`, "--token", write, "--json")
	if !strings.Contains(r.stdout, `"error_code": "INVALID_REQUEST"`) {
		t.Fatalf("out-of-domain value: %s", r.stdout)
	}
	r = capgate(t, "", nil, "audit", "verify", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "intact") {
		t.Fatalf("audit verify: %s", r.stdout)
	}

	// explain says why, and changes nothing: the write token has one use left after it.
	r = capgate(t, "", env, "explain", "settings", "set_setting", "--params", `{"category":"appearance","key":"theme","value":"ocean"}`, "--token", read)
	mustCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "deny (CAPABILITY_DENIED)") || !strings.Contains(r.stdout, "step 5") {
		t.Fatalf("explain: %s", r.stdout)
	}
	r = capgate(t, "", nil, "audit", "tail", "-n", "3", "--data", data)
	mustCode(t, r, 0)
	if strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("audit tail: %s", r.stdout)
	}
	// The JSON forms: tail's records in the token document's field names, as the export and
	// the mirror print them; verify's verdict.
	r = capgate(t, "", nil, "audit", "tail", "-n", "2", "--json", "--data", data)
	mustCode(t, r, 0)
	var tailed []struct {
		Seq      int64          `json:"seq"`
		PrevHash string         `json:"prev_hash"`
		Hash     string         `json:"hash"`
		Record   map[string]any `json:"record"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tailed); err != nil || len(tailed) != 2 || tailed[1].Seq != tailed[0].Seq+1 ||
		tailed[1].PrevHash != tailed[0].Hash || !strings.HasPrefix(tailed[0].Hash, "sha256:") {
		t.Fatalf("audit tail --json: %s (%v)", r.stdout, err)
	}
	for _, k := range []string{"timestamp", "token_id", "action", "app", "method", "params_hash", "result", "audit_tag", "decision", "code", "client_id", "kind"} {
		if _, ok := tailed[1].Record[k]; !ok {
			t.Errorf("audit tail --json: a record without %q: %v", k, tailed[1].Record)
		}
	}
	r = capgate(t, "", nil, "audit", "verify", "--json", "--data", data)
	mustCode(t, r, 0)
	var verdict struct {
		Intact   bool  `json:"intact"`
		Entries  int64 `json:"entries"`
		Problems []any `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &verdict); err != nil || !verdict.Intact || verdict.Entries < tailed[1].Seq ||
		verdict.Problems == nil || !strings.Contains(r.stdout, `"last_checkpoint_seq"`) {
		t.Fatalf("audit verify --json: %s (%v)", r.stdout, err)
	}
	r = capgate(t, "", nil, "audit", "export", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, `"prev_hash"`) || strings.Contains(r.stdout, "light") {
		t.Fatalf("audit export (params must appear only as a hash): %s", r.stdout[:min(len(r.stdout), 400)])
	}
	mresp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`capgate_calls_total{code="",decision="allow"}`, `capgate_calls_total{code="CAPABILITY_DENIED",decision="deny"}`, "capgate_call_duration_seconds_bucket", "capgate_consents_pending 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// loadThenKill has 16 callers make settings calls with tok through r for d, then kills r with
// SIGKILL while they call. It returns how many calls were acknowledged, and fails the test
// when none was; the first call that was not is logged.
func loadThenKill(t *testing.T, r *replica, key, tok string, d time.Duration) int64 {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked atomic.Int64
	var logged atomic.Bool
	for i := range 16 {
		wg.Go(func() {
			client := &http.Client{Timeout: 5 * time.Second}
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				a, err := ipcCall(client, r.url, key, tok, fmt.Sprintf("k%d-%d", i, j))
				switch {
				case err == nil && a.Status == "success":
					acked.Add(1)
				case logged.CompareAndSwap(false, true): // the server is gone, or refused: not acknowledged
					t.Logf("a call was not acknowledged: %+v %v", a, err)
				}
			}
		})
	}
	time.Sleep(d)
	r.kill() // SIGKILL mid-load
	close(stop)
	wg.Wait()
	if acked.Load() == 0 {
		t.Fatal("no call was acknowledged before the kill")
	}
	return acked.Load()
}

// TestKillDashNineUnderLoad kills the server with SIGKILL while agents call it, restarts it on
// the same data, and checks that the audit log is intact and holds a record of every call that
// was acknowledged.
func TestKillDashNineUnderLoad(t *testing.T) {
	data := t.TempDir()
	srv := serveChild(t, data, serveOptions{home: t.TempDir(), live: true})
	url := srv.url
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--data", data).stdout)
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}
	tr := capgate(t, "", env, "token", "request", "--capabilities", "system.settings.read", "--duration", "10m")
	mustCode(t, tr, 0)
	tok := strings.TrimSpace(tr.stdout)

	if _, err := ipcCall(http.DefaultClient, url, key, tok, "load"); err != nil {
		t.Fatalf("first call: %v (url %q, token %d bytes)", err, url, len(tok))
	}
	acked := loadThenKill(t, srv, key, tok, 1500*time.Millisecond)

	// Restart on the same data: it must come up, and the log must hold every acknowledged call.
	startServe(t, data)
	r := capgate(t, "", nil, "audit", "verify", "--data", data)
	mustCode(t, r, 0)
	r = capgate(t, "", nil, "audit", "export", "--data", data)
	recorded := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, `"kind":"outcome"`) && strings.Contains(line, `"result":"success"`) && strings.Contains(line, `"method":"get_setting"`) {
			recorded++
		}
	}
	if int64(recorded) < acked {
		t.Fatalf("%d calls acknowledged, %d recorded", acked, recorded)
	}
	t.Logf("%d calls acknowledged before SIGKILL, %d recorded", acked, recorded)
}

// evaluation_interval is a duration of a minute or more, or "off": anything else is a usage
// error that names the setting, before anything is served.
func TestServeEvaluationInterval(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"5s", "0s", "-1h", "soon", "OFF", "1"} {
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(cfg, []byte("evaluation_interval: \""+bad+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := capgate(t, "", nil, "--config", cfg, "serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--socket", "-")
		mustCode(t, r, 2)
		if !strings.Contains(r.stderr, "evaluation_interval") {
			t.Errorf("%q: the error %q does not name the setting", bad, r.stderr)
		}
	}
	for _, good := range []string{"1m", "6h", "off"} {
		if _, err := evaluationInterval(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
