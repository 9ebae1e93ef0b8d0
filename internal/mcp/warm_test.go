package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/manifest"
)

// Under 2026-07-28 capgate keeps the server it built for a client between requests, and
// every request still sees what a server built for it would: a tool the client may no longer
// use is neither listed nor callable at the very next request, one it may use now is, and two
// clients asking at once each get their own tools.
func TestWarmSessionFollowsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	kiosk := e.addClient("kiosk", "public", true)
	alice := e.addClient("alice", "user", true)
	listed := func(key string) string {
		t.Helper()
		r := e.post("POST", key, headers("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`)
		if r.status != 200 || r.Result == nil {
			t.Fatalf("tools/list: %d %+v", r.status, r.Error)
		}
		b, _ := json.Marshal(r.Result["tools"])
		return string(b)
	}
	calls := func(key string) bool {
		t.Helper()
		r := e.post("POST", key, headers("tools/call", "calc__compute"),
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calc__compute","arguments":{"expression":"2+2"},`+meta+`}}`)
		// A tool the client is not offered is unknown to its server: the SDK answers 400.
		return r.status == 200 && r.Error == nil && r.Result != nil && r.Result["isError"] != true
	}
	setTrust := func(trust manifest.AuthLevel) {
		t.Helper()
		c, err := e.g.Store.ClientByName(e.ctx, "kiosk")
		if err != nil {
			t.Fatal(err)
		}
		c.Trust = trust
		if err := e.g.Store.UpdateClient(e.ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := e.g.Broker.Sync(e.ctx); err != nil { // as the gateway's sweep does
			t.Fatal(err)
		}
	}
	for range 2 { // the second time on the kept servers
		if strings.Contains(listed(kiosk), "calc__compute") || calls(kiosk) {
			t.Fatalf("a public client is offered calc, or calls it")
		}
		if !strings.Contains(listed(alice), "calc__compute") || !calls(alice) {
			t.Fatalf("a user client is not offered calc, or cannot call it")
		}
	}
	setTrust("user")
	if !strings.Contains(listed(kiosk), "calc__compute") || !calls(kiosk) {
		t.Fatalf("after its trust rose the client is still not offered calc, or cannot call it")
	}
	setTrust("public")
	if calls(kiosk) {
		t.Fatalf("after its trust fell the client still calls calc on the next request")
	}
	if strings.Contains(listed(kiosk), "calc__compute") {
		t.Fatalf("after its trust fell the client is still offered calc")
	}

	// The registry moving (a pin lost, an app disabled) reaches the kept server at its
	// next request too, though nothing of the client changed.
	const calcID = "calc.org.capgate.calc.compute"
	e.g.Registry.SetPinned(calcID, false)
	if strings.Contains(listed(alice), "calc__compute") || calls(alice) {
		t.Fatalf("a capability no longer pinned is still offered, or called")
	}
	e.g.Registry.SetPinned(calcID, true)
	if !strings.Contains(listed(alice), "calc__compute") || !calls(alice) {
		t.Fatalf("a capability pinned again is not offered, or not called")
	}
	if err := e.g.Registry.SetEnabled(e.ctx, "org.capgate.calc", false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(listed(alice), "calc__compute") || calls(alice) {
		t.Fatalf("a disabled app's capability is still offered, or called")
	}
	if err := e.g.Registry.SetEnabled(e.ctx, "org.capgate.calc", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listed(alice), "calc__compute") || !calls(alice) {
		t.Fatalf("an app enabled again is not offered, or not called")
	}
}
