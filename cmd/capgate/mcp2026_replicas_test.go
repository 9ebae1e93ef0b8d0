package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// roundRobin is a plain load balancer in front of replicas: each request goes to the next
// replica in turn, whatever came before (no stickiness, no session affinity). It records
// which replica answered each JSON-RPC request.
type roundRobin struct {
	proxies []*httputil.ReverseProxy

	mu     sync.Mutex
	next   int
	served []routed
}

// routed is one request the balancer sent on: the replica's index, the JSON-RPC method, the
// tool's name for a tools/call, and the token handle it named, if any.
type routed struct {
	replica      int
	method, tool string
	handle       string
}

// newRoundRobin starts a balancer in front of rs for the test's length.
func newRoundRobin(t *testing.T, rs []*replica) (*httptest.Server, *roundRobin) {
	rr := &roundRobin{}
	for _, r := range rs {
		u, err := url.Parse(r.url)
		if err != nil {
			t.Fatal(err)
		}
		// The Host header stays the balancer's: the replicas' links then point at it.
		rr.proxies = append(rr.proxies, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		}})
	}
	srv := httptest.NewServer(rr)
	t.Cleanup(srv.Close)
	return srv, rr
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rec routed
	if r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string
			Params struct {
				Name string
				Meta map[string]any `json:"_meta"`
			}
		}
		if json.Unmarshal(body, &msg) == nil {
			rec.method, rec.tool = msg.Method, msg.Params.Name
			rec.handle, _ = msg.Params.Meta["capgate/token_handle"].(string)
		}
	}
	rr.mu.Lock()
	i := rr.next
	rr.next = (rr.next + 1) % len(rr.proxies)
	rec.replica = i
	if rec.method != "" {
		rr.served = append(rr.served, rec)
	}
	rr.mu.Unlock()
	rr.proxies[i].ServeHTTP(w, r)
}

func (rr *roundRobin) log() []routed {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]routed(nil), rr.served...)
}

// TestTypeScriptSDKv2ClientAcrossReplicas runs the official TypeScript SDK v2 client
// (testdata/npm/mcp2026/client.mjs) under MCP 2026-07-28 against three `capgate serve`
// replicas on one PostgreSQL database behind a plain round-robin balancer: every request
// goes to the next replica. The client lists, calls, requests a token on one replica and
// calls under its handle on another, and a call and a token request that need the person
// are retried on other replicas than the ones that opened them, while the person answers on
// a third replica's approval page. Nothing depends on which replica answers: there is no
// session, the tokens a client holds are in the store, and so are the consent requests.
func TestTypeScriptSDKv2ClientAcrossReplicas(t *testing.T) {
	script, node := npmPart(t, "../mcp2026/client.mjs")
	pg, data := pgtest.Schema(t), t.TempDir()
	rs := startReplicas(t, 3, data, pg)
	env := replicaEnv(data, pg)
	key := strings.TrimSpace(capgate(t, "", env, "client", "add", "agent", "--require-token").stdout)
	if !strings.HasPrefix(key, "cgk_") {
		t.Fatalf("client add printed %q", key)
	}
	lb, rr := newRoundRobin(t, rs)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	got := make(chan result, 1)
	go func() {
		r, err := runClean(t, exec.CommandContext(ctx, node, script, lb.URL, key), nil)
		if err != nil {
			t.Errorf("the client did not run: %v", err)
		}
		got <- r
	}()

	// The person signs in on the third replica's page and answers there: first the call,
	// then the token request.
	page := rs[2]
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	if page.login == "" {
		t.Fatal("serve printed no login link")
	}
	resp, err := browser.Get(page.login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, kind := range []string{"call", "token"} {
		id := waitPendingKindEnv(t, env, kind)
		resp, err := browser.Get(page.url + "/ui/requests/" + id)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrfField.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("the %s request's page on the third replica: HTTP %d\n%s", kind, resp.StatusCode, body)
		}
		resp, err = browser.PostForm(page.url+"/ui/requests/"+id+"/approve", url.Values{"csrf": {string(m[1])}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("approve on the page: HTTP %d", resp.StatusCode)
		}
	}
	seen := checkTSv2(t, <-got, lb.URL, key)

	// The balancer spread the work: every replica answered, and each step that spans
	// requests crossed replicas.
	log := rr.log()
	per := map[int]int{}
	for _, q := range log {
		per[q.replica]++
	}
	if len(per) != 3 {
		t.Errorf("requests per replica %v: the balancer did not reach all three", per)
	}
	handle, _ := seen.Steps["request"].Body["token_handle"].(string)
	var requested, used = -1, -1
	var callTries, tokenTries []int
	for _, q := range log {
		switch {
		case q.method != "tools/call":
		case q.tool == "capgate__request_capability" && requested < 0:
			requested = q.replica
		case q.tool == "calc__compute" && q.handle == handle && handle != "":
			used = q.replica
		case q.tool == "calc__compute" && q.handle == "":
			callTries = append(callTries, q.replica)
		}
		if q.method == "tools/call" && q.tool == "capgate__request_capability" {
			tokenTries = append(tokenTries, q.replica)
		}
	}
	if requested < 0 || used < 0 || requested == used {
		t.Errorf("the token was requested on replica %d and used by handle on %d: want two different replicas", requested, used)
	}
	for what, tries := range map[string][]int{"the call that needed the person": callTries, "the token requests": tokenTries} {
		if len(tries) < 2 || !spans(tries) {
			t.Errorf("%s went to replicas %v: want tries on more than one", what, tries)
		}
	}
	t.Logf("requests per replica %v; the consented call's tries %v, the token requests' %v", per, callTries, tokenTries)
	mustCode(t, capgate(t, "", env, "audit", "verify"), 0)
}

// spans reports whether the replicas in rs are not all one.
func spans(rs []int) bool {
	for _, r := range rs {
		if r != rs[0] {
			return true
		}
	}
	return false
}

// waitPendingKindEnv waits for a pending consent request of kind in the store env (and args)
// names and returns its id.
func waitPendingKindEnv(t *testing.T, env []string, kind string, args ...string) string {
	t.Helper()
	for range 300 {
		l := capgate(t, "", env, append([]string{"approvals", "list", "--json"}, args...)...)
		var pending []struct{ ID, Kind string }
		json.Unmarshal([]byte(l.stdout), &pending)
		for _, p := range pending {
			if p.Kind == kind {
				return p.ID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no pending %s request appeared", kind)
	return ""
}
