package trigger_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/manifest"
)

// A typed reply of another client fires a trigger that waits for it: only from that client,
// only of the declared type, once per reply id; its members reach the condition, never the
// action.
func TestReplies(t *testing.T) {
	e := newEnv(t)
	gatewaytest.AddClient(t, e.g.Store, store.Client{ID: "cl_pricer", Name: "pricer", Trust: manifest.AuthUser})
	gatewaytest.AddClient(t, e.g.Store, store.Client{ID: "cl_other", Name: "other", Trust: manifest.AuthUser})
	caller := func(id string) broker.Caller {
		c, err := e.g.Store.GetClient(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return broker.CallerOf(c)
	}
	s := e.spec("", "", 25, 5)
	s.Source = trigger.Source{Kind: trigger.SourceReply, From: "pricer",
		Schema: json.RawMessage(`{"type":"object","required":["price"],"properties":{"price":{"type":"number"},"key":{"type":"string"}},"additionalProperties":false}`)}
	s.Condition = "event.price < 100.0"
	for _, bad := range []trigger.Source{
		{Kind: trigger.SourceReply, From: "nobody", Schema: s.Source.Schema},
		{Kind: trigger.SourceReply, From: "agent", Schema: s.Source.Schema},
		{Kind: trigger.SourceReply, From: "pricer"},
		{Kind: trigger.SourceReply, From: "pricer", Schema: json.RawMessage(`{"type":5}`)},
		{Kind: trigger.SourceWebhook, From: "pricer"},
	} {
		b := s
		b.Source = bad
		if _, err := e.g.Triggers.Propose(e.ctx, e.caller(), b); !errors.Is(err, trigger.ErrInvalid) {
			t.Errorf("source %+v: %v, want ErrInvalid", bad, err)
		}
	}
	p := e.propose(s)
	if p.Source.From != "cl_pricer" {
		t.Fatalf("the sender is kept by id: %q", p.Source.From)
	}
	e.approve(p)
	reply := func(from, id, body string) error {
		_, err := e.g.Triggers.Reply(e.ctx, caller(from), p.ID, id, json.RawMessage(body))
		return err
	}
	if err := reply("cl_other", "r1", `{"price":10}`); !errors.Is(err, trigger.ErrNotFound) {
		t.Fatalf("a reply from another client: %v", err)
	}
	if err := reply("cl_pricer", "r1", `{"price":"cheap"}`); !errors.Is(err, trigger.ErrInvalid) {
		t.Fatalf("a reply of another type: %v", err)
	}
	if err := reply("cl_pricer", "r2", `{"price":250,"key":"input_volume"}`); err != nil {
		t.Fatal(err)
	}
	if err := reply("cl_pricer", "r3", `{"price":80,"key":"input_volume"}`); err != nil {
		t.Fatal(err)
	}
	if err := reply("cl_pricer", "r3", `{"price":80}`); !errors.Is(err, trigger.ErrReplay) {
		t.Fatalf("the same reply id again: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); e.volume() != "25"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cheap reply did not fire: volume %s, firings %v", e.volume(), e.firings(p.ID))
		}
	}
	if b, err := e.g.Store.GetState(e.ctx, "org.capgate.settings", "sound.input_volume"); err == nil {
		t.Fatalf("the reply's key reached the action: input_volume %s", b)
	}
}
