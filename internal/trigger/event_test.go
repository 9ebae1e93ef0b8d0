package trigger_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/trigger"
)

// monitorManifest declares an event with a payload schema: a reading of a sensor.
const monitorManifest = `{"app_id":"org.example.monitor","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"monitor.org.example.monitor.read","name":"Read","description":"Reads the sensor.","category":"STATE_QUERY",
  "parameters":{"type":"object","additionalProperties":false},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","risk":"low"}],
 "events":[{"event_type":"reading.taken","description":"A reading of the sensor.",
  "payload_schema":{"type":"object","required":["level"],"properties":{"level":{"type":"number"},"note":{"type":"string"}},"additionalProperties":false}}]}`

// An app's event declared in its manifest fires the triggers on it, once per event id; its
// payload is checked against the declared schema and read by the condition only: a payload
// that names another target changes nothing but whether the condition holds.
func TestAppEvents(t *testing.T) {
	e := newEnv(t)
	gatewaytest.Register(t, e.g.Registry, e.trusted, gatewaytest.NewKey(t), monitorManifest, "monitor")
	s := e.spec("", "", 15, 5)
	s.Source = trigger.Source{Kind: trigger.SourceEvent, App: "org.example.monitor", Event: "reading.taken"}
	s.Condition = "event.level > 80.0"
	p := e.propose(s)
	e.approve(p)

	emit := func(id, payload string) ([]trigger.Firing, error) {
		return e.g.Triggers.Emit(e.ctx, "org.example.monitor", "reading.taken", id, json.RawMessage(payload))
	}
	wait := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			f := e.firings(p.ID)
			if f[trigger.FiringDone]+f[trigger.FiringSkipped] >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %d firings: %v", n, f)
			}
		}
	}
	if fs, err := emit("r1", `{"level":20,"note":"set master_volume to 100"}`); err != nil || len(fs) != 1 {
		t.Fatalf("a low reading: %v %v", fs, err)
	}
	wait(1)
	if e.volume() != "unset" {
		t.Fatal("the condition did not hold, and the action ran")
	}
	if _, err := emit("r2", `{"level":95}`); err != nil {
		t.Fatal(err)
	}
	wait(2)
	if e.volume() != "15" {
		t.Fatalf("a high reading: volume %s, want 15", e.volume())
	}
	if fs, err := emit("r2", `{"level":99}`); err != nil || len(fs) != 0 {
		t.Fatalf("the same event id again took a firing: %v %v", fs, err)
	}
	for _, bad := range []string{`{"level":"high"}`, `{"note":"no level"}`, `{"level":1,"extra":true}`, `[1]`, `{"level":1,"level":2}`} {
		if _, err := emit("bad", bad); !errors.Is(err, trigger.ErrInvalid) {
			t.Errorf("payload %s: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := e.g.Triggers.Emit(e.ctx, "org.example.monitor", "reading.lost", "x", json.RawMessage(`{}`)); !errors.Is(err, trigger.ErrInvalid) {
		t.Errorf("an undeclared event: %v", err)
	}
	bad := e.spec("", "", 15, 5)
	bad.Source = trigger.Source{Kind: trigger.SourceEvent, App: "org.example.monitor", Event: "reading.lost"}
	if _, err := e.g.Triggers.Propose(e.ctx, e.caller(), bad); !errors.Is(err, trigger.ErrInvalid) {
		t.Errorf("a trigger on an undeclared event: %v", err)
	}
}
