package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/desktop/desktoptest"
)

// A GTK app with no manifest, running under Xvfb, put behind capgate: listed on the
// accessibility bus, added as Tier 2 capabilities, its button pressed by an agent's call
// once the person approves it (a Tier 2 capability above read asks at every call), and its
// label read back.
func TestDesktopAppBehindCapgate(t *testing.T) {
	s := desktoptest.Start(t, "../..")
	data := t.TempDir()
	env := append([]string{"CAPGATE_DATA_DIR=" + data}, s.Env...)
	l := capgate(t, "", env, "desktop", "list", "--json")
	mustCode(t, l, 0)
	if !strings.Contains(l.stdout, `"desktop.org.example.counter"`) {
		t.Fatalf("desktop list: %s", l.stdout)
	}
	mustCode(t, capgate(t, "", env, "desktop", "add", "org.example.Nope"), 1)
	add := capgate(t, "", env, "desktop", "add", desktoptest.CounterName, "--json")
	mustCode(t, add, 0)
	var added struct {
		AppID        string   `json:"app_id"`
		Alias        string   `json:"alias"`
		Tier         int      `json:"tier"`
		Capabilities []string `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(add.stdout), &added); err != nil || added.Tier != 2 || added.Alias != "counter" ||
		!strings.Contains(strings.Join(added.Capabilities, " "), "press_increment") {
		t.Fatalf("desktop add: %s (%v)", add.stdout, err)
	}
	r := serveEnv(t, data, s.Env)
	defer r.stop(t)
	_, agent := agentOn(t, env, r.url)
	call := func(method string) result {
		t.Helper()
		done := make(chan result, 1)
		go func() { done <- capgate(t, "", agent, "call", "counter", method, "--params", `{}`, "--json") }()
		mustCode(t, capgate(t, "", env, "approvals", "approve", waitPendingEnv(t, env)), 0)
		return <-done
	}
	if res := call("press_increment"); res.code != 0 || !strings.Contains(res.stdout, `"success"`) {
		t.Fatalf("the press: %+v", res)
	}
	res := call("get_text_count")
	if res.code != 0 || !strings.Contains(res.stdout, "count: 1") || !strings.Contains(res.stdout, "untrusted_output") {
		t.Fatalf("the label after the press: %+v", res)
	}
}
