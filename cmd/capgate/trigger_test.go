package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

// A trigger end to end on `capgate serve`: an agent proposes a webhook trigger over the IPC
// API, the person approves it with `capgate approvals approve`, a signed request fires it
// (once: a replay is refused, a forged signature too), and `capgate trigger` pauses, resumes,
// shows and deletes it.
func TestTriggerEndToEnd(t *testing.T) {
	data := t.TempDir()
	add := capgate(t, "", nil, "client", "add", "agent", "--trust", "user", "--data", data)
	mustCode(t, add, 0)
	key := strings.TrimSpace(add.stdout)
	st := openSQLite(t, data)
	if err := st.PutMandate(context.Background(), store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	url := startServe(t, data)

	do := func(method, path, body string, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	auth := map[string]string{"Authorization": "Bearer " + key}
	ends := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	spec := `{"source":{"kind":"webhook"},"condition":"event.level == \"error\"",
	 "action":{"app":"org.capgate.settings","method":"set_setting","params":{"category":"sound","key":"master_volume","value":5}},
	 "budget":{"count":10},"ends_at":"` + ends + `","reason":"turn the volume down when the monitor reports an error"}`
	if code, b := do("POST", "/v1/triggers", spec, nil); code != http.StatusUnauthorized {
		t.Fatalf("a proposal without a key: %d %s", code, b)
	}
	if code, b := do("POST", "/v1/triggers", `{"source":{"kind":"webhook"},"target":"/etc"}`, auth); code != http.StatusBadRequest || !bytes.Contains(b, []byte("target")) {
		t.Fatalf("an unknown member: %d %s", code, b)
	}
	code, b := do("POST", "/v1/triggers", spec, auth)
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/triggers: %d %s", code, b)
	}
	var p trigger.Proposal
	if err := json.Unmarshal(b, &p); err != nil || p.HookSecret == "" || p.HookPath != "/v1/hooks/"+p.ID || p.State != trigger.StateProposed {
		t.Fatalf("the proposal: %s (%v)", b, err)
	}
	secret, err := trigger.ParseHookSecret(p.HookSecret)
	if err != nil {
		t.Fatal(err)
	}
	if list := capgate(t, "", nil, "trigger", "list", "--data", data); list.code != 0 || !strings.Contains(list.stdout, p.ID) || !strings.Contains(list.stdout, "proposed") {
		t.Fatalf("trigger list: %+v", list)
	}
	mustCode(t, capgate(t, "", nil, "approvals", "approve", p.ConsentID, "--data", data), 0)
	show := func() trigger.View {
		t.Helper()
		r := capgate(t, "", nil, "trigger", "show", p.ID, "--json", "--data", data)
		mustCode(t, r, 0)
		var v trigger.View
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.stdout, p.HookSecret) || strings.Contains(r.stdout, `"token":`) {
			t.Fatal("trigger show shows the secret or the token")
		}
		return v
	}
	waitFor := func(what string, ok func(v trigger.View) bool) trigger.View {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			v := show()
			if ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %+v", what, v)
			}
		}
	}
	waitFor("the approved trigger to be active", func(v trigger.View) bool { return v.State == trigger.StateActive })

	hook := func(body string, at time.Time, s []byte) (int, []byte) {
		return do("POST", p.HookPath, body, map[string]string{trigger.HookSignatureHeader: trigger.SignHook(s, p.ID, at, []byte(body))})
	}
	body := `{"level":"error","category":"network","key":"proxy","value":"evil"}`
	if code, b := hook(body, time.Now(), bytes.Repeat([]byte{1}, 32)); code != http.StatusUnauthorized {
		t.Fatalf("a forged signature: %d %s", code, b)
	}
	if code, b := hook(body, time.Now().Add(-10*time.Minute), secret); code != http.StatusUnauthorized {
		t.Fatalf("a stale signature: %d %s", code, b)
	}
	now := time.Now()
	if code, b := hook(body, now, secret); code != http.StatusAccepted {
		t.Fatalf("a signed request: %d %s", code, b)
	}
	if code, b := hook(body, now, secret); code != http.StatusConflict {
		t.Fatalf("a replay: %d %s", code, b)
	}
	if code, b := hook(`{"level":"info"}`, time.Now(), secret); code != http.StatusAccepted {
		t.Fatalf("a second event: %d %s", code, b)
	}
	v := waitFor("two firings settled", func(v trigger.View) bool {
		n := 0
		for _, f := range v.Recent {
			if f.State == trigger.FiringDone || f.State == trigger.FiringSkipped {
				n++
			}
		}
		return n == 2
	})
	states := map[string]int{}
	for _, f := range v.Recent {
		states[f.State]++
	}
	if states[trigger.FiringDone] != 1 || states[trigger.FiringSkipped] != 1 || v.Used != 1 {
		t.Fatalf("the error fires and the info is skipped by the condition: %v, used %d", states, v.Used)
	}
	// The event's members never reach the action: the fixed setting changed, no other.
	st = openSQLite(t, data)
	vol, _ := st.GetState(context.Background(), "org.capgate.settings", "sound.master_volume")
	_, proxyErr := st.GetState(context.Background(), "org.capgate.settings", "network.proxy")
	st.Close()
	if string(vol) != "5" || proxyErr == nil {
		t.Fatalf("after the firing: volume %s, network.proxy set: %v", vol, proxyErr == nil)
	}
	if code, b := do("GET", "/v1/triggers", "", auth); code != http.StatusOK || !bytes.Contains(b, []byte(p.ID)) || bytes.Contains(b, []byte(p.HookSecret)) {
		t.Fatalf("GET /v1/triggers: %d %s", code, b)
	}

	mustCode(t, capgate(t, "", nil, "trigger", "pause", p.ID, "--data", data), 0)
	mustCode(t, capgate(t, "", nil, "trigger", "pause", p.ID, "--data", data), 1)
	if code, b := hook(`{"level":"error"}`, time.Now(), secret); code != http.StatusConflict {
		t.Fatalf("a paused trigger's webhook: %d %s", code, b)
	}
	mustCode(t, capgate(t, "", nil, "trigger", "resume", p.ID, "--data", data), 0)
	mustCode(t, capgate(t, "", nil, "trigger", "delete", p.ID, "--json", "--data", data), 0)
	mustCode(t, capgate(t, "", nil, "trigger", "show", p.ID, "--data", data), 1)
	if code, _ := hook(`{"level":"error"}`, time.Now(), secret); code != http.StatusNotFound {
		t.Fatalf("a deleted trigger's webhook: %d", code)
	}
	mustCode(t, capgate(t, "", nil, "trigger", "pause", "--data", data), 2)
	mustCode(t, capgate(t, "", nil, "trigger", "show", "trg_nope", "--data", data), 1)
}

// A `capgate serve` killed with SIGKILL in the middle of a firing: the firing was allowed and
// waits out its delayed-commit window (the terminal's commands cannot be undone) when the
// process dies. The next serve sees the process gone and takes the firing up at once; the
// audit log says it was allowed and has no outcome, and a command is not idempotent, so the
// firing is marked interrupted and never run again: the command never ran, the log verifies.
func TestTriggerKillDashNineMidFiring(t *testing.T) {
	data := t.TempDir()
	add := capgate(t, "", nil, "client", "add", "agent", "--trust", "user", "--data", data)
	mustCode(t, add, 0)
	key := strings.TrimSpace(add.stdout)
	st := openSQLite(t, data)
	if err := st.PutMandate(context.Background(), store.Mandate{Permission: "app.terminal.execute", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := serveWith(t, data)
	post := func(url, path, body string, header map[string]string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, b := post(r.url, "/v1/triggers", `{"source":{"kind":"webhook"},
	 "action":{"app":"org.capgate.terminal","method":"execute_command","params":{"command":"touch fired.txt"}},
	 "budget":{"count":5},"ends_at":"`+ends+`"}`, map[string]string{"Authorization": "Bearer " + key})
	if code == http.StatusForbidden && bytes.Contains(b, []byte("not working right now")) {
		t.Skip("the terminal does not run here (no sandbox): " + string(b))
	}
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/triggers: %d %s", code, b)
	}
	var p trigger.Proposal
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	secret, _ := trigger.ParseHookSecret(p.HookSecret)
	mustCode(t, capgate(t, "", nil, "approvals", "approve", p.ConsentID, "--data", data), 0)
	show := func() trigger.View {
		t.Helper()
		res := capgate(t, "", nil, "trigger", "show", p.ID, "--json", "--data", data)
		mustCode(t, res, 0)
		var v trigger.View
		if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for deadline := time.Now().Add(15 * time.Second); show().State != trigger.StateActive; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the approved trigger never became active")
		}
	}
	body := `{"go":true}`
	if code, b := post(r.url, p.HookPath, body, map[string]string{trigger.HookSignatureHeader: trigger.SignHook(secret, p.ID, time.Now(), []byte(body))}); code != http.StatusAccepted {
		t.Fatalf("the webhook: %d %s", code, b)
	}
	// The firing is allowed and waits out its delayed commit: a commit request is pending.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res := capgate(t, "", nil, "approvals", "list", "--json", "--data", data)
		if strings.Contains(res.stdout, `"kind": "commit"`) || strings.Contains(res.stdout, `"kind":"commit"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delayed commit came: %s", res.stdout)
		}
	}
	r.kill()
	r2 := serveWith(t, data)
	defer r2.stop(t)
	var v trigger.View
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v = show()
		if len(v.Recent) == 1 && v.Recent[0].State != trigger.FiringTaken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the interrupted firing was not taken up: %+v", v.Recent)
		}
	}
	if f := v.Recent[0]; f.State != trigger.FiringInterrupted {
		t.Fatalf("the firing after the kill: %+v, want interrupted", f)
	}
	if _, err := os.Stat(filepath.Join(gateway.DefaultWorkspace(data), "fired.txt")); err == nil {
		t.Fatal("the command ran, though its commit window never ended")
	}
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}

// A provider process emits an event of its own through HostService: a trigger on it fires.
func TestProviderEventFiresTrigger(t *testing.T) {
	bin := providertest.Build(t)
	man := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(man, providertest.Manifest(t), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	mustCode(t, capgate(t, "", env, "app", "register", man, "--alias", "echo", "--command", bin, "--", "-emit", "-emit-every", "200ms"), 0)
	add := capgate(t, "", env, "client", "add", "agent", "--trust", "user")
	mustCode(t, add, 0)
	key := strings.TrimSpace(add.stdout)
	st := openSQLite(t, data)
	if err := st.PutMandate(context.Background(), store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r := serveWith(t, data)
	defer r.stop(t)
	spec := `{"source":{"kind":"event","app":"org.example.echo","event":"echo.said"},"condition":"event.text == \"tick\"",
	 "action":{"app":"org.capgate.settings","method":"set_setting","params":{"category":"sound","key":"master_volume","value":7}},
	 "budget":{"count":1},"ends_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
	req, _ := http.NewRequest("POST", r.url+"/v1/triggers", strings.NewReader(spec))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/triggers: %d %s", resp.StatusCode, b)
	}
	var p trigger.Proposal
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	mustCode(t, capgate(t, "", env, "approvals", "approve", p.ConsentID), 0)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		res := capgate(t, "", env, "trigger", "show", p.ID, "--json")
		var v trigger.View
		if err := json.Unmarshal([]byte(res.stdout), &v); err == nil && v.State == trigger.StateStopped && v.Used == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the provider's event did not fire the trigger to its budget: %s", res.stdout)
		}
	}
}
