package mcp_test

// 2026-07-28 on /mcp: the wire rules of the sessionless revision (raw HTTP, as an attacker or
// a careless client would send it), tokens held by handle across sessions and clients, and
// consent as input requests, through the SDK's own client in its stateless mode.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/mcp"
	"github.com/capgate/capgate/internal/store"
)

// rpcReply is one JSON-RPC answer read from a streamable HTTP response.
type rpcReply struct {
	status int
	header http.Header
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends one raw request to /mcp and reads the answer (JSON or the first SSE message).
func (e *env) post(method, key string, header map[string]string, body string) rpcReply {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	r := rpcReply{status: resp.StatusCode, header: resp.Header}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			line = data
		}
		if json.Unmarshal([]byte(line), &r) == nil && (r.Result != nil || r.Error != nil) {
			break
		}
	}
	return r
}

// meta is the per-request _meta of the sessionless revision.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

func headers(method, name string) map[string]string {
	h := map[string]string{"Mcp-Protocol-Version": mcp.Stateless, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// The revision's wire rules: server/discover, per-request _meta and headers that must agree
// (a mismatch is HTTP 400 with -32020), no sessions (an inbound Mcp-Session-Id is ignored and
// none is given), 405 on GET and DELETE, and truthful cache hints.
func TestStatelessWire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	key := e.addClient("alice", "user", false)

	disc := e.post("POST", key, headers("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`)
	if disc.status != http.StatusOK || disc.Result == nil {
		t.Fatalf("server/discover: %d %+v", disc.status, disc.Error)
	}
	vs, _ := json.Marshal(disc.Result["supportedVersions"])
	for _, v := range mcp.ServedVersions {
		if !strings.Contains(string(vs), `"`+v+`"`) {
			t.Errorf("server/discover: %s not among %s", v, vs)
		}
	}
	if disc.Result["cacheScope"] != "public" {
		t.Errorf("server/discover cacheScope %v, want public (the same for every client)", disc.Result["cacheScope"])
	}
	if sid := disc.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a session id under 2026-07-28: %q", sid)
	}

	// An inbound session id means nothing: no 404 for a session nobody opened.
	h := headers("tools/list", "")
	h["Mcp-Session-Id"] = "made-up-session"
	list := e.post("POST", key, h, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`)
	if list.status != http.StatusOK || list.Result == nil {
		t.Fatalf("tools/list with a made-up session id: %d %+v", list.status, list.Error)
	}
	if list.Result["cacheScope"] != "private" || list.Result["ttlMs"] != float64(mcp.ToolsListTTL.Milliseconds()) {
		t.Errorf("tools/list cache hints: scope %v ttl %v, want private and %d", list.Result["cacheScope"], list.Result["ttlMs"], mcp.ToolsListTTL.Milliseconds())
	}
	if sid := list.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a session id under 2026-07-28: %q", sid)
	}

	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc__compute","arguments":{"expression":"1+1"},` + meta + `}}`
	if r := e.post("POST", key, headers("tools/call", "calc__compute"), call); r.status != http.StatusOK || r.Result == nil || r.Result["isError"] == true {
		t.Fatalf("tools/call with agreeing headers: %d %+v %v", r.status, r.Error, r.Result)
	}
	for name, tc := range map[string]struct {
		header map[string]string
		body   string
	}{
		"Mcp-Method names another method": {headers("tools/list", "calc__compute"), call},
		"Mcp-Name names another tool":     {headers("tools/call", "files__delete_file"), call},
		"no Mcp-Name":                     {headers("tools/call", ""), call},
		"no Mcp-Method":                   {map[string]string{"Mcp-Protocol-Version": mcp.Stateless, "Mcp-Name": "calc__compute"}, call},
		"the header an older version":     {map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "calc__compute"}, call},
		"no version header":               {map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "calc__compute"}, call},
		"_meta an older version": {headers("tools/call", "calc__compute"),
			strings.Replace(call, `protocolVersion":"2026-07-28"`, `protocolVersion":"2025-11-25"`, 1)},
	} {
		r := e.post("POST", key, tc.header, tc.body)
		if r.status != http.StatusBadRequest || r.Error == nil || r.Error.Code != -32020 {
			code := 0
			if r.Error != nil {
				code = r.Error.Code
			}
			t.Errorf("%s: HTTP %d, JSON-RPC error %d; want 400 and -32020", name, r.status, code)
		}
	}
	for _, method := range []string{"GET", "DELETE"} {
		if r := e.post(method, key, map[string]string{"Mcp-Protocol-Version": mcp.Stateless}, ""); r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s under 2026-07-28: %d, want 405", method, r.status)
		}
	}
	if r := e.post("POST", "cgk_nope", headers("tools/list", ""), `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{`+meta+`}}`); r.status != http.StatusUnauthorized {
		t.Errorf("an unknown key under 2026-07-28: %d, want 401", r.status)
	}
}

// Tokens are held for the client, not the session: a token requested in one session (or one
// 2026-07-28 request) serves the next; a call may name its token by handle; a handle
// presented with another client's key is refused and audited, and proves nothing.
func TestHandles(t *testing.T) { eachRevision(t, testHandles) }

func testHandles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	alice := e.putClient(store.Client{Name: "alice", Trust: "user", RequireToken: true})
	bob := e.putClient(store.Client{Name: "bob", Trust: "user", NeverAsk: true, RequireToken: true})
	first := e.connect(alice, nil)
	got := e.call(first, mcp.ToolRequestCapability, map[string]any{"capabilities": []string{"calc__compute"}, "duration": 600, "max_uses": 3})
	wantOK(t, "request", got)
	handle := got.str("token_handle")
	if !strings.HasPrefix(handle, "cgh_") || strings.Contains(handle, got.str("token_id")) {
		t.Fatalf("request: handle %q: %s", handle, got.text)
	}
	// Another session (another connection, as on another replica) of the same client.
	second := e.connect(alice, nil)
	a := e.call(second, "calc__compute", map[string]any{"expression": "2+2"})
	wantOK(t, "compute in another session", a)
	if a.str("token_handle") != handle {
		t.Errorf("the call used %q, want the held %q", a.str("token_handle"), handle)
	}
	named := func(cs *mcpsdk.ClientSession, h any) answer {
		t.Helper()
		res, err := cs.CallTool(e.ctx, &mcpsdk.CallToolParams{Name: "calc__compute", Arguments: map[string]any{"expression": "3+3"}, Meta: mcpsdk.Meta{mcp.HandleMeta: h}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		e.noSecret("named call", string(b))
		ans := answer{isError: res.IsError, text: res.Content[0].(*mcpsdk.TextContent).Text}
		_ = json.Unmarshal([]byte(ans.text), &ans.body)
		return ans
	}
	wantOK(t, "a call naming the handle", named(second, handle))

	// Bob, with alice's handle: refused as if there were none, and recorded.
	bobs := e.connect(bob, nil)
	wantCode(t, "bob with alice's handle", named(bobs, handle), "INVALID_TOKEN")
	found := false
	entries, err := e.g.Store.AuditRange(e.ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.Contains(string(en.Body), "held for another client") && strings.Contains(string(en.Body), `"client_id":"cl_bob"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("bob's use of alice's handle is not in the audit log")
	}
	wantCode(t, "bob without a token", e.call(bobs, "calc__compute", map[string]any{"expression": "1"}), "CAPABILITY_DENIED")
	wantCode(t, "an unknown handle", named(second, "cgh_00000000000000000000000000000000"), "INVALID_TOKEN")
	for _, bad := range []any{"cgt1.something", 42, "", "cgh_XYZ", strings.Repeat("a", 300)} {
		wantCode(t, "a malformed handle", named(second, bad), "INVALID_REQUEST")
	}
	// The third and last use, then the token is used up and forgotten.
	wantOK(t, "the third use", e.call(second, "calc__compute", map[string]any{"expression": "4"}))
	wantCode(t, "used up", named(second, handle), "TOKEN_EXHAUSTED")
	if _, err := e.g.Store.GetHolding(e.ctx, handle); err == nil {
		t.Errorf("a used-up token is still held")
	}
}

// elicited records the URL elicitations a client's handler received and answers them with
// answer(round, params).
type elicited struct {
	mu     sync.Mutex
	params []*mcpsdk.ElicitParams
	answer func(round int, p *mcpsdk.ElicitParams) string
}

func (el *elicited) handler(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	el.mu.Lock()
	el.params = append(el.params, req.Params)
	round := len(el.params)
	el.mu.Unlock()
	return &mcpsdk.ElicitResult{Action: el.answer(round, req.Params)}, nil
}

func (el *elicited) all() []*mcpsdk.ElicitParams {
	el.mu.Lock()
	defer el.mu.Unlock()
	return append([]*mcpsdk.ElicitParams(nil), el.params...)
}

// requestOf is the consent request an input request or a URL elicitation points to: the last
// segment of its URL (2026-07-28 has no elicitationId; the older revisions' must be the same).
func requestOf(p *mcpsdk.ElicitParams) string {
	id := p.URL[strings.LastIndex(p.URL, "/")+1:]
	if p.ElicitationID != "" && p.ElicitationID != id {
		return "elicitationId " + p.ElicitationID + " is not the URL's request " + id
	}
	return id
}

func urlClient(el *elicited) *mcpsdk.ClientOptions {
	return &mcpsdk.ClientOptions{
		Capabilities:       &mcpsdk.ClientCapabilities{Elicitation: &mcpsdk.ElicitationCapabilities{URL: &mcpsdk.URLElicitationCapabilities{}}},
		ElicitationHandler: el.handler,
	}
}

// Under 2026-07-28 a call that needs the person answers with an input request to the
// approval page; the client's retry completes the call once the person answered there. The
// client's accept is not consent: until the person answers, the call does not run.
func TestConsentAsInputRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 200*time.Millisecond)
	e.version = mcp.Stateless
	el := &elicited{}
	el.answer = func(round int, p *mcpsdk.ElicitParams) string {
		if round == 3 {
			// The person answers on the page while the client's third round is on its way.
			if err := e.g.Consent.Approve(e.ctx, requestOf(p), "person", false); err != nil {
				t.Errorf("approve: %v", err)
			}
		} else if st := e.consentState(requestOf(p)); st != store.ConsentPending {
			t.Errorf("round %d: the request is %s before the person answered", round, st)
		}
		return "accept"
	}
	cs := e.connect(e.addClient("alice", "user", false), urlClient(el))
	got := e.call(cs, "files__write_file", map[string]any{"path": "a.txt", "content": "x"})
	wantOK(t, "write after the person approved", got)
	asked := el.all()
	if len(asked) != 3 {
		t.Fatalf("%d input requests, want 3 (two accepted rounds before the person answered)", len(asked))
	}
	id := requestOf(asked[0])
	for _, p := range asked {
		if p.Mode != "url" || requestOf(p) != id || p.URL != e.srv.URL+"/ui/requests/"+id {
			t.Errorf("input request %+v, want a URL elicitation to %s/ui/requests/%s", p, e.srv.URL, id)
		}
	}
	if st := e.consentState(id); st != store.ConsentApproved {
		t.Errorf("the request is %s", st)
	}

	// Declined: nothing waits and nothing runs; the request stays for the person, and the
	// result says what the client said.
	decl := &elicited{answer: func(int, *mcpsdk.ElicitParams) string { return "decline" }}
	cs2 := e.connect(e.addClient("dave", "user", false), urlClient(decl))
	got = e.call(cs2, "files__write_file", map[string]any{"path": "b.txt", "content": "y"})
	wantCode(t, "declined", got, "CONSENT_REQUIRED")
	if got.str("consent", "elicitation", "client_answer") != "decline" || got.str("consent", "id") == "" {
		t.Errorf("declined: %s", got.text)
	}
	if st := e.consentState(got.str("consent", "id")); st != store.ConsentPending {
		t.Errorf("the client's decline became %s", st)
	}
}

// The request state names a consent request and proves nothing: another call's, another
// client's, or an approval already used is refused; none runs a call twice.
func TestInputRequestStateProvesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 200*time.Millisecond)
	e.version = mcp.Stateless
	manual := func(key string) *mcpsdk.ClientSession {
		opts := urlClient(&elicited{answer: func(int, *mcpsdk.ElicitParams) string { return "accept" }})
		opts.MultiRoundTrip = &mcpsdk.MultiRoundTripOptions{Disabled: true}
		return e.connect(key, opts)
	}
	alice := manual(e.addClient("alice", "user", false))
	mallory := manual(e.addClient("mallory", "user", false))
	write := map[string]any{"path": "c.txt", "content": "z"}
	res, err := alice.CallTool(e.ctx, &mcpsdk.CallToolParams{Name: "files__write_file", Arguments: write})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, res)
	}
	ir, ok := res.InputRequests[mcp.ConsentInput].(*mcpsdk.ElicitParams)
	if !ok || ir.Mode != "url" {
		t.Fatalf("input requests: %+v", res.InputRequests)
	}
	id := requestOf(ir)
	accept := mcpsdk.InputResponseMap{mcp.ConsentInput: &mcpsdk.ElicitResult{Action: "accept"}}
	retry := func(cs *mcpsdk.ClientSession, args map[string]any, state string) answer {
		t.Helper()
		r, err := cs.CallTool(e.ctx, &mcpsdk.CallToolParams{Name: "files__write_file", Arguments: args, InputResponses: accept, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		if r.NeedsInput() {
			return answer{text: "input required", body: map[string]any{"error_code": "INPUT_REQUIRED"}, isError: true}
		}
		a := answer{isError: r.IsError, text: r.Content[0].(*mcpsdk.TextContent).Text}
		_ = json.Unmarshal([]byte(a.text), &a.body)
		return a
	}
	if a := retry(alice, write, res.RequestState); a.str("error_code") != "INPUT_REQUIRED" {
		t.Fatalf("an accepted round before the person answered: %s", a.text)
	}
	if err := e.g.Consent.Approve(e.ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "mallory with alice's request state", retry(mallory, write, res.RequestState), "INVALID_REQUEST")
	wantCode(t, "another call with the state", retry(alice, map[string]any{"path": "other.txt", "content": "z"}, res.RequestState), "INVALID_REQUEST")
	wantCode(t, "a state capgate did not give", retry(alice, write, "capgate-consent:req_nope"), "INVALID_REQUEST")
	wantOK(t, "alice's retry after the person approved", retry(alice, write, res.RequestState))
	wantCode(t, "the same approval again", retry(alice, write, res.RequestState), "INVALID_REQUEST")

	// The same for a token request: its state names the request for these grants and terms.
	grant := map[string]any{"capabilities": []string{"fs.write"}, "duration": 600, "reason": "save"}
	ask := func(cs *mcpsdk.ClientSession, args map[string]any, state string) (*mcpsdk.CallToolResult, answer) {
		t.Helper()
		p := &mcpsdk.CallToolParams{Name: mcp.ToolRequestCapability, Arguments: args}
		if state != "" {
			p.InputResponses, p.RequestState = accept, state
		}
		r, err := cs.CallTool(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.NeedsInput() {
			return r, answer{}
		}
		a := answer{isError: r.IsError, text: r.Content[0].(*mcpsdk.TextContent).Text}
		_ = json.Unmarshal([]byte(a.text), &a.body)
		return r, a
	}
	first, _ := ask(alice, grant, "")
	if !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("a token request that needs the person: %+v", first)
	}
	tokenReq := requestOf(first.InputRequests[mcp.ConsentInput].(*mcpsdk.ElicitParams))
	if err := e.g.Consent.Approve(e.ctx, tokenReq, "person", false); err != nil {
		t.Fatal(err)
	}
	_, a := ask(mallory, grant, first.RequestState)
	wantCode(t, "mallory with alice's token request", a, "INVALID_REQUEST")
	_, a = ask(alice, map[string]any{"capabilities": []string{"fs.delete"}, "duration": 600, "reason": "save"}, first.RequestState)
	wantCode(t, "other grants with the state", a, "INVALID_REQUEST")
	_, a = ask(alice, map[string]any{"capabilities": []string{"fs.write"}, "duration": 600, "max_uses": 1, "reason": "save"}, first.RequestState)
	wantCode(t, "other terms with the state", a, "INVALID_REQUEST")
	_, a = ask(alice, grant, first.RequestState)
	wantOK(t, "alice's token after the person approved", a)
	if a.str("consent_id") != tokenReq || !strings.HasPrefix(a.str("token_handle"), "cgh_") {
		t.Errorf("issued: %s", a.text)
	}
	_, a = ask(alice, grant, first.RequestState)
	wantCode(t, "a second token from one approval", a, "INVALID_REQUEST")
}

// A client that listens is told when its tools change: an operator raising the client's
// trust changes what it may use, and the list it gets next.
func TestListChangedOnGrantChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	e.version = mcp.Stateless
	key := e.addClient("kiosk", "public", true)
	changed := make(chan struct{}, 8)
	cs := e.connect(key, &mcpsdk.ClientOptions{ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if _, ok := tools(t, cs)["calc__compute"]; ok {
		t.Fatalf("a public client is offered calc")
	}
	c, err := e.g.Store.ClientByName(e.ctx, "kiosk")
	if err != nil {
		t.Fatal(err)
	}
	c.Trust = "user"
	if err := e.g.Store.UpdateClient(e.ctx, c); err != nil {
		t.Fatal(err)
	}
	// The gateway's sweep, which `capgate serve` runs on its ticker, sees the store's
	// revision move (here by hand: the test serves the handler without the sweep).
	if _, err := e.g.Broker.Sync(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after the client's trust changed")
	}
	if _, ok := tools(t, cs)["calc__compute"]; !ok {
		t.Errorf("after the change the list still lacks calc")
	}
}

// `capgate mcp` (Forward) serves 2026-07-28 too: a sessionless client's input request comes
// from the gateway through the forwarder as it is, and its answer goes back; a client of a
// handshake revision gets the URL elicitation as before. Either way the person answers on the
// page, and only then does the call run.
func TestForwardServesBothRevisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 300*time.Millisecond)
	key := e.addClient("alice", "user", false)
	for i, version := range []string{mcp.Stateless, "2025-11-25"} {
		ctx, cancel := context.WithCancel(e.ctx)
		t.Cleanup(cancel) // before the gateway closes, which waits for the forwarder's connections
		ct, st := mcpsdk.NewInMemoryTransports()
		done := make(chan error, 1)
		go func() { done <- mcp.Forward(ctx, mcp.ForwardOptions{URL: e.srv.URL, Key: key, Transport: st}) }()
		el := &elicited{answer: func(_ int, p *mcpsdk.ElicitParams) string {
			if err := e.g.Consent.Approve(e.ctx, requestOf(p), "person", false); err != nil {
				t.Errorf("%s: approve: %v", version, err)
			}
			return "accept"
		}}
		cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "stdio-agent", Version: "1"}, urlClient(el)).
			Connect(ctx, ct, &mcpsdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: connect: %v", version, err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != version {
			t.Errorf("over the forwarder the client speaks %s, want %s", v, version)
		}
		got := e.call(cs, "files__write_file", map[string]any{"path": "f" + string(rune('0'+i)) + ".txt", "content": "x"})
		wantOK(t, version+": a write the person approved", got)
		asked := el.all()
		if len(asked) != 1 || asked[0].Mode != "url" || asked[0].URL != e.srv.URL+"/ui/requests/"+requestOf(asked[0]) {
			t.Errorf("%s: elicitations %+v", version, asked)
		}
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Forward: %v", version, err)
		}
	}
}
