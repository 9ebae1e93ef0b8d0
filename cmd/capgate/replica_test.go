package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/token"
)

// startReplicas starts n `capgate serve` processes at once on one data folder (one set of
// keys) and the PostgreSQL store pg, each on its own loopback port. They are stopped with
// SIGTERM at the end of the test, which must be graceful for every one not killed.
func startReplicas(t *testing.T, n int, data, pg string) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i], errs[i] = launchServe(data, serveOptions{args: []string{"--store", pg}}) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, r := range rs {
			if r != nil {
				r.stop(t)
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	return rs
}

// answer is the part of an IPC answer the replica tests look at.
type answer struct {
	Status    string `json:"status"`
	ErrorCode string `json:"error_code"`
}

// ipcCall makes one settings.get_setting call with tok through the replica at base.
func ipcCall(client *http.Client, base, key, tok, requestID string) (answer, error) {
	body := `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"` + requestID +
		`"},"body":{"action":"query","app":"settings","method":"get_setting","params":{"category":"sound","key":"master_volume"},"capability_token":"` + tok + `"}}`
	req, _ := http.NewRequest("POST", base+"/v1/ipc", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	var out struct{ Body answer }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return answer{}, fmt.Errorf("HTTP %d: not an IPC answer: %w", resp.StatusCode, err)
	}
	return out.Body, nil
}

// replicaEnv is the environment of CLI commands on the replicas' store and data folder.
func replicaEnv(data, pg string) []string {
	return []string{"CAPGATE_DATA_DIR=" + data, "CAPGATE_STORE=" + pg}
}

// agentOn adds the client agent to the store env names and returns its key and the
// environment of its commands through the gateway at url.
func agentOn(t *testing.T, env []string, url string) (key string, agent []string) {
	t.Helper()
	key = strings.TrimSpace(capgate(t, "", env, "client", "add", "agent").stdout)
	return key, append(env, "CAPGATE_SERVER="+url, "CAPGATE_CLIENT_KEY="+key)
}

// agentToken adds the client agent (agentOn) and requests a ten-minute token for
// system.settings.read with at most maxUses uses ("" for no limit). It returns the client
// key and the token.
func agentToken(t *testing.T, env []string, url, maxUses string) (key, tok string) {
	t.Helper()
	key, agent := agentOn(t, env, url)
	args := []string{"token", "request", "--capabilities", "system.settings.read"}
	if maxUses != "" {
		args = append(args, "--max-uses", maxUses)
	}
	r := capgate(t, "", agent, append(args, "--duration", "10m")...)
	mustCode(t, r, 0)
	return key, strings.TrimSpace(r.stdout)
}

// TestReplicasExactUses drives a token with 40 uses from 48 concurrent callers spread over
// three replicas: exactly 40 calls succeed, every other one is TOKEN_EXHAUSTED, and the store
// agrees.
func TestReplicasExactUses(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	rs := startReplicas(t, 3, data, pg)
	env := replicaEnv(data, pg)
	key, tok := agentToken(t, env, rs[1].url, "40")

	var ok, exhausted atomic.Int64
	var other atomic.Pointer[string]
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			for j := 0; ; j++ {
				a, err := ipcCall(client, rs[i%3].url, key, tok, fmt.Sprintf("u%d-%d", i, j))
				switch {
				case err != nil:
					s := err.Error()
					other.CompareAndSwap(nil, &s)
					return
				case a.Status == "success":
					ok.Add(1)
				case a.ErrorCode == "TOKEN_EXHAUSTED":
					exhausted.Add(1)
					return
				default:
					s := a.Status + " " + a.ErrorCode
					other.CompareAndSwap(nil, &s)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := other.Load(); p != nil {
		t.Errorf("a call got neither success nor TOKEN_EXHAUSTED: %s", *p)
	}
	if ok.Load() != 40 || exhausted.Load() != 48 {
		t.Fatalf("%d successes and %d TOKEN_EXHAUSTED, want 40 and 48", ok.Load(), exhausted.Load())
	}
	st, err := postgres.Open(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	parsed, err := token.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetToken(t.Context(), parsed.ID)
	if err != nil || got.Uses != 40 {
		t.Fatalf("the store holds %d uses (%v), want 40", got.Uses, err)
	}
	mustCode(t, capgate(t, "", env, "audit", "verify"), 0)
}

// TestReplicasRevocation revokes a token through one replica, and through the store as the
// operator does, while every replica has it cached: the very next call on each other replica
// is refused, for a token without a use limit (checked at use by a read) and one with a limit
// (checked when the use is taken).
func TestReplicasRevocation(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	rs := startReplicas(t, 3, data, pg)
	env := replicaEnv(data, pg)
	key, agent := agentOn(t, env, rs[0].url)
	client := &http.Client{Timeout: 30 * time.Second}
	for _, limit := range []string{"", "1000"} {
		for _, via := range []string{"replica", "store"} {
			t.Run(fmt.Sprintf("max-uses=%q/via-%s", limit, via), func(t *testing.T) {
				args := []string{"token", "request", "--capabilities", "system.settings.read", "--duration", "10m"}
				if limit != "" {
					args = append(args, "--max-uses", limit)
				}
				r := capgate(t, "", agent, args...)
				mustCode(t, r, 0)
				tok := strings.TrimSpace(r.stdout)
				for i, rep := range rs { // every replica has verified and cached it
					if a, err := ipcCall(client, rep.url, key, tok, "warm"); err != nil || a.Status != "success" {
						t.Fatalf("replica %d before the revocation: %+v %v", i, a, err)
					}
				}
				if via == "replica" {
					mustCode(t, capgate(t, "", agent, "token", "revoke", tok), 0)
				} else {
					mustCode(t, capgate(t, "", env, "token", "revoke", tok, "--data", data), 0)
				}
				for i, rep := range rs {
					a, err := ipcCall(client, rep.url, key, tok, "after")
					if err != nil || a.ErrorCode != "INVALID_TOKEN" {
						t.Errorf("replica %d right after the revocation: %+v %v, want INVALID_TOKEN", i, a, err)
					}
				}
			})
		}
	}
}

// csrfField finds the CSRF token in an approval page.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestReplicasConsent asks for a token through one replica and approves the request on
// another replica's approval page: the call waiting on the first completes with the token.
// A denial through a third releases its waiting call as a refusal.
func TestReplicasConsent(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	rs := startReplicas(t, 3, data, pg)
	env := replicaEnv(data, pg)
	_, agent := agentOn(t, env, rs[0].url)

	for _, tc := range []struct {
		page    *replica
		verb    string
		success bool
	}{{rs[1], "approve", true}, {rs[2], "deny", false}} {
		got := make(chan result, 1)
		go func() {
			got <- capgate(t, "", agent, "token", "request", "--capabilities", "system.settings.write", "--max-uses", "1", "--duration", "10m", "--reason", "switch the theme")
		}()
		id := waitPendingEnv(t, env)

		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		if tc.page.login == "" {
			t.Fatal("serve printed no login link")
		}
		resp, err := browser.Get(tc.page.login)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = browser.Get(tc.page.url + "/ui/requests/" + id)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrfField.FindSubmatch(page)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("the request's page on another replica: HTTP %d\n%s", resp.StatusCode, page)
		}
		start := time.Now()
		resp, err = browser.PostForm(tc.page.url+"/ui/requests/"+id+"/"+tc.verb, url.Values{"csrf": {string(m[1])}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s on the page: HTTP %d", tc.verb, resp.StatusCode)
		}
		select {
		case r := <-got:
			if tc.success {
				mustCode(t, r, 0)
				if !strings.HasPrefix(strings.TrimSpace(r.stdout), "cgt1.") {
					t.Fatalf("the waiting token request printed %q", r.stdout)
				}
			} else if r.code == 0 {
				t.Fatalf("a denied request gave a token: %q", r.stdout)
			}
			t.Logf("%s through another replica released the waiting call in %v", tc.verb, time.Since(start))
		case <-time.After(20 * time.Second):
			t.Fatalf("the call waiting on replica 0 was not released by the %s on another replica", tc.verb)
		}
	}
	mustCode(t, capgate(t, "", env, "audit", "verify"), 0)
}

// waitPendingEnv waits for a pending consent request in the store env (and args) name and
// returns its id.
func waitPendingEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	for range 100 {
		l := capgate(t, "", env, append([]string{"approvals", "list", "--json"}, args...)...)
		var pending []struct{ ID string }
		json.Unmarshal([]byte(l.stdout), &pending)
		if len(pending) > 0 {
			return pending[0].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no pending request appeared")
	return ""
}

// TestReplicasKillDashNine drives calls through three replicas with one token, kills one with
// SIGKILL mid-load, and checks: the others go on serving; every acknowledged call has its
// outcome in the log; no use was taken twice (the store's count lies between the calls
// acknowledged and the calls allowed); `capgate audit verify` passes.
func TestReplicasKillDashNine(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	rs := startReplicas(t, 3, data, pg)
	env := replicaEnv(data, pg)
	key, tok := agentToken(t, env, rs[0].url, "1000000")

	const workers = 8 // per replica
	var acked [3]atomic.Int64
	var refused atomic.Pointer[answer]
	ctx, stopLoad := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 3 * workers {
		wg.Go(func() {
			rep := i % 3
			client := &http.Client{Timeout: 10 * time.Second}
			for j := 0; ctx.Err() == nil; j++ {
				a, err := ipcCall(client, rs[rep].url, key, tok, fmt.Sprintf("k%d-%d", i, j))
				switch {
				case err != nil: // the replica is gone: not acknowledged
					time.Sleep(10 * time.Millisecond)
				case a.Status == "success":
					acked[rep].Add(1)
				default:
					refused.CompareAndSwap(nil, &a)
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	before := acked[2].Load()
	rs[2].kill()
	time.Sleep(1500 * time.Millisecond)
	stopLoad()
	wg.Wait()
	if a := refused.Load(); a != nil {
		t.Errorf("a call was refused: %+v", *a)
	}
	for i := range 2 {
		if acked[i].Load() == 0 {
			t.Fatalf("replica %d acknowledged no call", i)
		}
	}
	if before == 0 {
		t.Fatal("the killed replica acknowledged no call before the kill")
	}
	total := acked[0].Load() + acked[1].Load() + acked[2].Load()

	mustCode(t, capgate(t, "", env, "audit", "verify"), 0)
	out := capgate(t, "", env, "audit", "export").stdout
	parsed, err := token.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	outcomes, allowed := 0, 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `"method":"get_setting"`) || !strings.Contains(line, parsed.ID) {
			continue
		}
		if strings.Contains(line, `"kind":"outcome"`) && strings.Contains(line, `"result":"success"`) {
			outcomes++
		}
		if strings.Contains(line, `"kind":"decision"`) && strings.Contains(line, `"decision":"allow"`) {
			allowed++
		}
	}
	st, err := postgres.Open(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.GetToken(t.Context(), parsed.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls acknowledged (%d by the killed replica before SIGKILL); %d outcomes and %d allowed decisions recorded; %d uses taken",
		total, before, outcomes, allowed, got.Uses)
	if int64(outcomes) < total {
		t.Errorf("%d calls acknowledged, %d success outcomes recorded", total, outcomes)
	}
	// A use is taken once per allowed call; the killed replica may have taken uses for calls
	// it never got to record or acknowledge, one per worker at most.
	if got.Uses < total || got.Uses > int64(allowed)+workers {
		t.Errorf("%d uses taken for %d acknowledged and %d allowed calls", got.Uses, total, allowed)
	}
}

// TestStoreChosenByConfigFile picks the PostgreSQL store through the configuration file's
// store setting, and refuses a store that names nothing capgate knows, saying which setting.
func TestStoreChosenByConfigFile(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	cfg := data + "/config.yaml"
	writeFile(t, cfg, "data_dir: "+data+"\nstore: '"+pg+"'\n")
	mustCode(t, capgate(t, "", nil, "--config", cfg, "client", "add", "from-config"), 0)
	st, err := postgres.Open(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ClientByName(t.Context(), "from-config"); err != nil {
		t.Fatalf("the client is not in the configured PostgreSQL store: %v", err)
	}
	// The flag wins over the file.
	mustCode(t, capgate(t, "", nil, "--config", cfg, "--store", "sqlite:local.db", "client", "add", "local"), 0)
	if _, err := os.Stat(data + "/local.db"); err != nil {
		t.Fatalf("--store sqlite:local.db: %v", err)
	}
	for _, bad := range []string{"mysql://db/capgate", "sqlite:"} {
		r := capgate(t, "", nil, "serve", "--data", data, "--store", bad)
		if r.code != 2 || !strings.Contains(r.stderr, "--store") {
			t.Errorf("serve --store %s: %+v", bad, r)
		}
	}
}
