package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/capgate/capgate/internal/a2a"
	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
)

// The card is served to anyone at the well-known path, and says what an A2A client needs:
// the two skills, the JSON-RPC endpoint under the Host it was asked by, and bearer keys.
func TestCard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	card := e.card()
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	if !slices.Equal(skills, []string{"give_task", "task_status"}) {
		t.Errorf("skills %v, want give_task and task_status", skills)
	}
	if card.URL != e.srv.URL+"/a2a" || card.ProtocolVersion != "0.3.0" || card.PreferredTransport != a2asdk.TransportProtocolJSONRPC {
		t.Errorf("url %q, protocol %q over %q", card.URL, card.ProtocolVersion, card.PreferredTransport)
	}
	if !slices.Equal(card.DefaultInputModes, []string{"application/json"}) || !slices.Equal(card.DefaultOutputModes, []string{"application/json"}) {
		t.Errorf("modes %v / %v", card.DefaultInputModes, card.DefaultOutputModes)
	}
	scheme, ok := card.SecuritySchemes["clientKey"].(a2asdk.HTTPAuthSecurityScheme)
	if !ok || scheme.Scheme != "bearer" {
		t.Errorf("security schemes %#v, want clientKey: http bearer", card.SecuritySchemes)
	}
	if len(card.Security) != 1 || card.Security[0]["clientKey"] == nil {
		t.Errorf("security %#v, want clientKey required", card.Security)
	}

	// The raw card says plainly that neither streaming nor push notifications are served.
	res, err := http.Get(e.srv.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var raw struct {
		Capabilities map[string]any `json:"capabilities"`
	}
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if raw.Capabilities["streaming"] != false || raw.Capabilities["pushNotifications"] != false {
		t.Errorf("capabilities %v, want streaming and pushNotifications false", raw.Capabilities)
	}
	if res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", res.Header.Get("Content-Type"))
	}
}

// Every JSON-RPC call needs a client key the gateway knows; the refusal is 401 with a
// Bearer challenge, before anything of the request is read.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	const body = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":[{"kind":"data","data":{"capability":"echo.org.example.echo.say","params":{"text":"hi"}}}]}}}`
	for _, key := range []string{"", "cgk_no_such_key"} {
		status, b := e.rpc(key, body)
		if status != http.StatusUnauthorized {
			t.Errorf("key %q: %d %s, want 401", key, status, b)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/a2a", strings.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("WWW-Authenticate") != `Bearer realm="capgate"` {
		t.Errorf("WWW-Authenticate %q", res.Header.Get("WWW-Authenticate"))
	}
	// The SDK's client with an unknown key gets the 401 too, and no task was made.
	if _, err := e.connect("cgk_no_such_key", false).give(map[string]any{"capability": sayID}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("an unknown key: %v, want a 401", err)
	}
	if m, err := e.g.Store.ListState(e.ctx, a2a.StateApp, ""); err != nil || len(m) != 0 {
		t.Errorf("tasks kept after refusals: %d (%v)", len(m), err)
	}
	// GET of the endpoint is no JSON-RPC call.
	res, err = http.Get(e.srv.URL + "/a2a")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /a2a: %d, want 405", res.StatusCode)
	}
}

// A public read given as a task completes, and neither the answer nor tasks/get carries any
// of its content: only the ids, the kind and the state with its time.
func TestReadCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	key := e.addClient("alice", "user", false)
	const secret = "content-that-stays-in-capgate"
	blocking := e.connect(key, false)
	task := blocking.mustGive(sayID, map[string]any{"text": secret})
	if task.Status.State != a2asdk.TaskStateCompleted || task.ID == "" || task.ContextID == "" || task.Status.Timestamp == nil {
		t.Fatalf("blocking give: %+v, want completed with ids and a time", task)
	}
	if task.History != nil || task.Artifacts != nil || task.Metadata != nil || task.Status.Message != nil {
		t.Errorf("the answer carries content: %+v", task)
	}

	// The raw JSON of tasks/get: exactly the ids, the kind and the state, and no result.
	status, body := e.rpc(key, fmt.Sprintf(`{"jsonrpc":"2.0","id":"q","method":"tasks/get","params":{"id":%q,"historyLength":10}}`, task.ID))
	if status != http.StatusOK {
		t.Fatalf("tasks/get: %d %s", status, body)
	}
	if strings.Contains(string(body), secret) || strings.Contains(string(body), `"text"`) {
		t.Errorf("tasks/get carries the result: %s", body)
	}
	var res struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	var members []string
	for k := range res.Result {
		members = append(members, k)
	}
	slices.Sort(members)
	if !slices.Equal(members, []string{"contextId", "id", "kind", "status"}) {
		t.Errorf("tasks/get members %v, want only contextId, id, kind, status: %s", members, body)
	}
	var st map[string]json.RawMessage
	_ = json.Unmarshal(res.Result["status"], &st)
	if len(st) != 2 || string(st["state"]) != `"completed"` || st["timestamp"] == nil {
		t.Errorf("status %s, want only state completed and its timestamp", res.Result["status"])
	}

	// Without blocking, the answer comes at once, and the task completes on its own.
	polling := e.connect(key, true)
	task = polling.mustGive(sayID, map[string]any{"text": secret})
	if s := task.Status.State; s != a2asdk.TaskStateSubmitted && s != a2asdk.TaskStateWorking && s != a2asdk.TaskStateCompleted {
		t.Errorf("non-blocking give: %s", s)
	}
	polling.until(task.ID, a2asdk.TaskStateCompleted)

	// The call went through the broker as the client, recorded as a query (a read).
	var ran int
	for _, r := range gatewaytest.AuditRecords(t, e.g.Store) {
		if r.Capability == sayID && r.Kind == "outcome" {
			ran++
			if r.ClientID != "cl_alice" || r.Action != "query" {
				t.Errorf("audit record: client %q, action %q", r.ClientID, r.Action)
			}
		}
	}
	if ran != 2 {
		t.Errorf("%d outcomes recorded, want 2", ran)
	}
}

// A write given by a client that holds no grant does not run: the task waits for the
// person's consent (auth-required), for as long as the request lives, and runs only once
// the person approves it. A client that may never ask has it rejected, and so has one whose
// request the person denies.
func TestWriteNeedsGrant(t *testing.T) {
	t.Parallel()
	// The broker stops waiting after 200 ms; the task waits for the same request again.
	e := newEnv(t, 200*time.Millisecond, time.Minute)
	written := filepath.Join(e.g.Workspace(), "report.txt")
	notWritten := func(when string) {
		t.Helper()
		if _, err := os.Stat(written); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the file was written (%v)", when, err)
		}
	}
	write := map[string]any{"path": "report.txt", "content": "from another assistant"}

	// Never asks: refused at once.
	never := e.connect(e.addClient("robot", "user", true), false)
	task := never.mustGive(files.WriteFileID, write)
	if task.Status.State != a2asdk.TaskStateRejected {
		t.Errorf("a client that never asks: %s, want rejected", task.Status.State)
	}
	notWritten("rejected")

	// Asks: the blocking give answers once the task waits for the person.
	alice := e.connect(e.addClient("alice", "user", false), false)
	task = alice.mustGive(files.WriteFileID, write)
	if task.Status.State != a2asdk.TaskStateAuthRequired {
		t.Fatalf("a write without a grant: %s, want auth-required", task.Status.State)
	}
	id := gatewaytest.WaitPending(t, e.g.Store, "")
	notWritten("waiting for the person")
	// Past the broker's own wait, the task still waits for the same request.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		awaited := slices.ContainsFunc(gatewaytest.AuditRecords(t, e.g.Store), func(r audit.Record) bool {
			return r.ConsentID == id && r.Result == "consent awaited"
		})
		if awaited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task did not wait for its consent request again")
		}
	}
	if got, err := alice.get(task.ID); err != nil || got.Status.State != a2asdk.TaskStateAuthRequired {
		t.Fatalf("still waiting: %v (%v), want auth-required", state(got), err)
	}
	notWritten("still waiting")
	if cs, _ := e.g.Store.ListConsents(e.ctx, store.ConsentPending); len(cs) != 1 {
		t.Errorf("%d consent requests pending, want the one", len(cs))
	}
	if err := e.g.Consent.Approve(e.ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	alice.until(task.ID, a2asdk.TaskStateCompleted)
	if b, err := os.ReadFile(written); err != nil || string(b) != "from another assistant" {
		t.Fatalf("after the approval: %q, %v", b, err)
	}

	// Denied: rejected, and nothing written.
	other := filepath.Join(e.g.Workspace(), "other.txt")
	denied := gatewaytest.AnswerNext(t, e.g.Store, "", func(ctx context.Context, id string) error {
		return e.g.Consent.Deny(ctx, id, "person")
	})
	task = alice.mustGive(files.WriteFileID, map[string]any{"path": "other.txt", "content": "no"})
	if <-denied == "" {
		t.Fatal("no consent request to deny")
	}
	alice.until(task.ID, a2asdk.TaskStateRejected)
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a denied write was written (%v)", err)
	}
}

// Only the client that gave a task sees it: another client's task id answers exactly as an
// unknown one does.
func TestOtherClientsTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	aliceKey, bobKey := e.addClient("alice", "user", false), e.addClient("bob", "user", false)
	alice, bob := e.connect(aliceKey, false), e.connect(bobKey, false)
	task := alice.mustGive(sayID, map[string]any{"text": "mine"})

	_, err := bob.get(task.ID)
	wantErr(t, "bob's tasks/get of alice's task", err, a2asdk.ErrTaskNotFound)
	_, err = bob.c.CancelTask(bob.ctx, &a2asdk.TaskIDParams{ID: task.ID})
	wantErr(t, "bob's tasks/cancel of alice's task", err, a2asdk.ErrTaskNotFound)
	_, err = bob.get(a2asdk.NewTaskID())
	wantErr(t, "an unknown task", err, a2asdk.ErrTaskNotFound)
	_, err = bob.get(a2asdk.TaskID(strings.Repeat("x", 200)))
	wantErr(t, "an id no task has", err, a2asdk.ErrTaskNotFound)

	// The two answers are the same bytes but for the id asked: nothing tells them apart.
	_, theirs := e.rpc(bobKey, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, task.ID))
	unknown := a2asdk.NewTaskID()
	_, none := e.rpc(bobKey, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, unknown))
	if string(theirs) != string(none) {
		t.Errorf("another client's task %s and an unknown one %s answer differently", theirs, none)
	}
	wantRPCError(t, "another client's task", theirs, -32001, "task not found")

	if got, err := alice.get(task.ID); err != nil || got.Status.State != a2asdk.TaskStateCompleted {
		t.Errorf("alice's own task: %v (%v)", state(got), err)
	}
}

// A task that is over is not cancelable; one that waits for the person is canceled, and its
// call does not run.
func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	alice := e.connect(e.addClient("alice", "user", false), false)
	done := alice.mustGive(sayID, map[string]any{"text": "x"})
	_, err := alice.c.CancelTask(alice.ctx, &a2asdk.TaskIDParams{ID: done.ID})
	wantErr(t, "cancel of a completed task", err, a2asdk.ErrTaskNotCancelable)

	task := alice.mustGive(files.WriteFileID, map[string]any{"path": "cancelled.txt", "content": "x"})
	if task.Status.State != a2asdk.TaskStateAuthRequired {
		t.Fatalf("write: %s, want auth-required", task.Status.State)
	}
	id := gatewaytest.WaitPending(t, e.g.Store, "")
	got, err := alice.c.CancelTask(alice.ctx, &a2asdk.TaskIDParams{ID: task.ID})
	if err != nil || got.Status.State != a2asdk.TaskStateCanceled {
		t.Fatalf("cancel: %v (%v), want canceled", state(got), err)
	}
	if got, err := alice.get(task.ID); err != nil || got.Status.State != a2asdk.TaskStateCanceled {
		t.Errorf("after the cancel: %v (%v)", state(got), err)
	}
	_, err = alice.c.CancelTask(alice.ctx, &a2asdk.TaskIDParams{ID: task.ID})
	wantErr(t, "cancel of a canceled task", err, a2asdk.ErrTaskNotCancelable)
	// The task's question is withdrawn: the person is not left one nothing waits on, and an
	// approval after the cancel runs nothing.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := e.g.Store.GetConsent(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == store.ConsentCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canceled task's consent request is %s, want cancelled", c.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = e.g.Consent.Approve(e.ctx, id, "person", false)
	if _, err := os.Stat(filepath.Join(e.g.Workspace(), "cancelled.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a canceled write was written (%v)", err)
	}
}

// A task is one data part {"capability": ..., "params": {...}} (or the IPC form): anything
// else is refused with the JSON-RPC error of its kind, naming the field path, and no task is
// made.
func TestMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	key := e.addClient("alice", "user", false)
	send := func(parts string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"role":"user","messageId":"m","parts":` + parts + `}}}`
	}
	for _, c := range []struct {
		name, body string
		code       int
		what       string
	}{
		{"an unknown member", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","params":{},"capability_token":"x"}}]`),
			-32602, "params.message.parts[0].data.capability_token: not a member of a task"},
		{"an unknown member of the part", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say"},"extra":1}]`),
			-32602, "params.message.parts[0].extra"},
		{"no capability", send(`[{"kind":"data","data":{"params":{"text":"x"}}}]`), -32602, "params.message.parts[0].data.capability: required"},
		{"both forms", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","app":"echo","method":"say"}}]`), -32602, "not both"},
		{"app without method", send(`[{"kind":"data","data":{"app":"echo"}}]`), -32602, "data.method: required"},
		{"no capability id", send(`[{"kind":"data","data":{"capability":"say"}}]`), -32602, "data.capability: must be a capability id"},
		{"params not an object", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","params":[1]}}]`), -32602, "data.params: must be an object"},
		{"two parts", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say"}},{"kind":"data","data":{"capability":"echo.org.example.echo.say"}}]`),
			-32602, "params.message.parts: has 2 parts"},
		{"no parts", send(`[]`), -32602, "params.message.parts: has 0 parts"},
		{"text only", send(`[{"kind":"text","text":"please write the report"}]`), -32602, "a task names a capability"},
		{"a file", send(`[{"kind":"file","file":{"uri":"https://example.com/x"}}]`), -32602, "a task names a capability"},
		{"a taskId", `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"role":"user","messageId":"m","taskId":"t1","parts":[{"kind":"data","data":{"capability":"echo.org.example.echo.say"}}]}}}`,
			-32602, "params.message.taskId"},
		{"no message", `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{}}`, -32602, "params.message: required"},
		{"a duplicate member", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","capability":"files.org.capgate.files.write_file"}}]`),
			-32700, "duplicate"},
		{"not JSON", `{"jsonrpc":"2.0",`, -32700, "parse error"},
		{"too deep", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","params":{"a":` + strings.Repeat("[", 60) + strings.Repeat("]", 60) + `}}}]`),
			-32700, "parse error"},
		{"too large", send(`[{"kind":"data","data":{"capability":"echo.org.example.echo.say","params":{"text":"` + strings.Repeat("x", a2a.MaxRequestBytes) + `"}}}]`),
			-32600, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := e.rpc(key, c.body)
			if status != http.StatusOK {
				t.Fatalf("%d %s, want a JSON-RPC error", status, body)
			}
			wantRPCError(t, c.name, body, c.code, c.what)
			if len(body) > 2048 {
				t.Errorf("an error of %d bytes: it echoes the request", len(body))
			}
		})
	}
	// The SDK's client sees an unknown member as invalid params.
	_, err := e.connect(key, false).give(map[string]any{"capability": sayID, "token": "cgt1.x"})
	wantErr(t, "an unknown member through the SDK", err, a2asdk.ErrInvalidParams)
	if m, err := e.g.Store.ListState(e.ctx, a2a.StateApp, ""); err != nil || len(m) != 0 {
		t.Errorf("tasks made of refused messages: %d (%v)", len(m), err)
	}

	// The IPC form is a task too.
	task, err := e.connect(key, false).give(map[string]any{"app": "echo", "method": "say", "params": map[string]any{"text": "x"}})
	if err != nil || task.Status.State != a2asdk.TaskStateCompleted {
		t.Errorf("the IPC form: %v (%v)", state(task), err)
	}
	// A capability the registry does not have is refused by the broker: rejected.
	task, err = e.connect(key, false).give(map[string]any{"capability": "echo.org.example.echo.shout"})
	if err != nil || task.Status.State != a2asdk.TaskStateRejected {
		t.Errorf("an unknown capability: %v (%v), want rejected", state(task), err)
	}
	// Params the capability's schema refuses: rejected, not run.
	task, err = e.connect(key, false).give(map[string]any{"capability": sayID, "params": map[string]any{"words": 1}})
	if err != nil || task.Status.State != a2asdk.TaskStateRejected {
		t.Errorf("params the schema refuses: %v (%v), want rejected", state(task), err)
	}
}

// Streaming, resubscription, push notifications and the extended card are not served, and
// say so with A2A's errors.
func TestUnsupported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	key := e.addClient("alice", "user", false)
	tr := a2aclient.NewJSONRPCTransport(e.srv.URL+"/a2a", &http.Client{Transport: bearer{key}})
	msg := &a2asdk.MessageSendParams{Message: a2asdk.NewMessage(a2asdk.MessageRoleUser, a2asdk.DataPart{Data: map[string]any{"capability": sayID}})}
	var events int
	var streamErr error
	for _, err := range tr.SendStreamingMessage(e.ctx, msg) {
		if err != nil {
			streamErr = err
			break
		}
		events++
	}
	if events != 0 {
		t.Errorf("message/stream: %d events", events)
	}
	wantErr(t, "message/stream", streamErr, a2asdk.ErrUnsupportedOperation)
	var resubErr error
	for _, err := range tr.ResubscribeToTask(e.ctx, &a2asdk.TaskIDParams{ID: a2asdk.NewTaskID()}) {
		resubErr = err
		break
	}
	wantErr(t, "tasks/resubscribe", resubErr, a2asdk.ErrUnsupportedOperation)
	_, err := tr.GetTaskPushConfig(e.ctx, &a2asdk.GetTaskPushConfigParams{TaskID: a2asdk.NewTaskID()})
	wantErr(t, "tasks/pushNotificationConfig/get", err, a2asdk.ErrPushNotificationNotSupported)
	_, err = tr.GetAgentCard(e.ctx)
	wantErr(t, "agent/getAuthenticatedExtendedCard", err, a2asdk.ErrAuthenticatedExtendedCardNotConfigured)
	_, err = tr.SendMessage(e.ctx, &a2asdk.MessageSendParams{Message: msg.Message, Config: &a2asdk.MessageSendConfig{PushConfig: &a2asdk.PushConfig{URL: "https://example.com/hook"}}})
	wantErr(t, "message/send with a push config", err, a2asdk.ErrPushNotificationNotSupported)
}

// Tasks survive a restart: one that was over answers as it was; one that waited for the
// person when the gateway closed is failed, not working for ever; and a record left by a
// process whose lease ran out is failed too, while one whose lease holds still runs there.
func TestRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	key := e.addClient("alice", "user", false)
	alice := e.connect(key, false)
	done := alice.mustGive(sayID, map[string]any{"text": "before"})
	waiting := alice.mustGive(files.WriteFileID, map[string]any{"path": "late.txt", "content": "x"})
	if done.Status.State != a2asdk.TaskStateCompleted || waiting.Status.State != a2asdk.TaskStateAuthRequired {
		t.Fatalf("before the restart: %s and %s", done.Status.State, waiting.Status.State)
	}

	// Records as another capgate process leaves them, in the store's own format.
	now := time.Now().UTC()
	put := func(id string, lease time.Time) {
		rec := fmt.Sprintf(`{"id":%q,"context_id":"c","state":"working","at":%q,"created":%q,"runner":"another-process","lease":%q}`,
			id, now.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), lease.Format(time.RFC3339Nano))
		if err := e.g.Store.PutState(e.ctx, a2a.StateApp, "task/"+fmt.Sprintf("%x", "cl_alice")+"/"+id, []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	put("crashed-task", now.Add(-time.Minute))
	put("elsewhere-task", now.Add(time.Hour))

	e.restart()
	alice = e.connect(key, false)
	if got, err := alice.get(done.ID); err != nil || got.Status.State != a2asdk.TaskStateCompleted || got.ContextID != done.ContextID {
		t.Errorf("a completed task after the restart: %+v (%v)", got, err)
	}
	if got, err := alice.get(waiting.ID); err != nil || got.Status.State != a2asdk.TaskStateFailed {
		t.Errorf("a task cut short by the restart: %v (%v), want failed", state(got), err)
	}
	if got, err := alice.get("crashed-task"); err != nil || got.Status.State != a2asdk.TaskStateFailed {
		t.Errorf("a task whose process ended: %v (%v), want failed", state(got), err)
	}
	if got, err := alice.get("elsewhere-task"); err != nil || got.Status.State != a2asdk.TaskStateWorking {
		t.Errorf("a task another process runs: %v (%v), want working", state(got), err)
	}
	_, err := alice.c.CancelTask(alice.ctx, &a2asdk.TaskIDParams{ID: "elsewhere-task"})
	wantErr(t, "cancel of another process's task", err, a2asdk.ErrTaskNotCancelable)
	if _, err := os.Stat(filepath.Join(e.g.Workspace(), "late.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted write was written (%v)", err)
	}
}

// At most MaxTasksPerClient of a client's tasks are kept: giving more forgets the oldest
// that are over, which then answer as unknown.
func TestKeptBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	alice := e.connect(e.addClient("alice", "user", false), false)
	var ids []a2asdk.TaskID
	for i := range a2a.MaxTasksPerClient + 3 {
		ids = append(ids, alice.mustGive(sayID, map[string]any{"text": fmt.Sprint(i)}).ID)
	}
	if m, err := e.g.Store.ListState(e.ctx, a2a.StateApp, ""); err != nil || len(m) != a2a.MaxTasksPerClient {
		t.Errorf("%d tasks kept (%v), want %d", len(m), err, a2a.MaxTasksPerClient)
	}
	for _, id := range ids[:3] {
		_, err := alice.get(id)
		wantErr(t, "a forgotten task", err, a2asdk.ErrTaskNotFound)
	}
	if got, err := alice.get(ids[3]); err != nil || got.Status.State != a2asdk.TaskStateCompleted {
		t.Errorf("the oldest task kept: %v (%v)", state(got), err)
	}
}

// A client has at most MaxRunningPerClient tasks running at once; another client is not
// held up by it.
func TestRunningBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	alice := e.connect(e.addClient("alice", "user", false), true)
	for i := range a2a.MaxRunningPerClient {
		alice.mustGive(files.WriteFileID, map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": "x"})
	}
	_, err := alice.give(map[string]any{"capability": sayID, "params": map[string]any{"text": "one more"}})
	wantErr(t, "a task beyond the bound", err, a2asdk.ErrServerError)
	bob := e.connect(e.addClient("bob", "user", false), false)
	if task := bob.mustGive(sayID, map[string]any{"text": "x"}); task.Status.State != a2asdk.TaskStateCompleted {
		t.Errorf("another client: %s", task.Status.State)
	}
}

// The gate passes the gateway's endpoint, and keeps closed one that lets anybody in or
// serves no card.
func TestSelfTest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second, time.Minute)
	if err := a2a.SelfTest(e.ctx, e.g.Handler()); err != nil {
		t.Fatalf("the gateway's endpoint: %v", err)
	}
	open := a2a.NewHandler(a2a.Options{Broker: e.g.Broker, State: e.g.Store,
		Authenticate: func(*http.Request) (broker.Caller, bool) { return broker.Caller{ClientID: "anyone"}, true }})
	if err := a2a.SelfTest(e.ctx, open); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("an endpoint that lets any key in: %v", err)
	}
	gated, err := a2a.Gate(e.ctx, http.NotFoundHandler())
	if err == nil || !strings.Contains(err.Error(), "the card") {
		t.Errorf("an endpoint without a card: %v", err)
	}
	rec := httptest.NewRecorder()
	gated.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, a2a.CardPath, nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not working right now") {
		t.Errorf("a gated endpoint: %d %q", rec.Code, rec.Body.String())
	}
}
