package trigger

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
)

// StateApp is the app id under which triggers and their firings are kept in the store's app
// state (store.State), beside capgate's other own state ("capgate.a2a", "capgate.undo").
const StateApp = "capgate.triggers"

// The states of a trigger.
const (
	StateProposed = "proposed" // waiting for the person's answer
	StateActive   = "active"   // fires
	StatePaused   = "paused"   // fires nothing until resumed; its times pass unrun
	StateStopped  = "stopped"  // for good: Stopped says why
)

// The event sources.
const (
	SourceSchedule = "schedule" // cron in a time zone
	SourceWebhook  = "webhook"  // POST /v1/hooks/{id}, signed with the trigger's secret
	SourceEvent    = "event"    // an app's event, declared in its manifest's events
	SourceReply    = "reply"    // a typed reply of another client (an agent, an assistant)
)

// The missed policies: what becomes of scheduled times that passed while capgate was down.
const (
	MissedSkip = "skip" // recorded as skipped, not run
	MissedOnce = "once" // run once for them all when capgate is back
)

// Source is where a trigger's events come from.
type Source struct {
	Kind     string `json:"kind"`                // SourceSchedule, SourceWebhook or SourceEvent
	Cron     string `json:"cron,omitempty"`      // schedule: five fields or a descriptor
	TimeZone string `json:"time_zone,omitempty"` // schedule: an IANA zone, required
	App      string `json:"app,omitempty"`       // event: the app's id
	Event    string `json:"event,omitempty"`     // event: the event type the app declares
	// From is a reply's sender: another client, by id or name when proposed, by id once
	// proposed. Schema is the JSON Schema its reply must pass.
	From   string          `json:"from,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Action is the one action a trigger may take: a capability and its params, fixed when the
// trigger is proposed.
type Action struct {
	App    string          `json:"app"`    // the app's id or alias
	Method string          `json:"method"` // the capability's action, or its full id
	Params json.RawMessage `json:"params"` // an object; canonical once proposed
}

// Budget bounds what a trigger may do: a count of firings and, for an action with an amount
// param, the sum of its amounts.
type Budget struct {
	Count  int64   `json:"count"`
	Amount *Amount `json:"amount,omitempty"`
}

// Amount is a sum budget: Field names a top-level number param of the action (its amount),
// Max the most all firings may spend together. The params are fixed, so every firing spends
// the same amount, and the sum bounds the count: at most Max divided by the amount.
type Amount struct {
	Field string      `json:"field"`
	Max   json.Number `json:"max"`
}

// Spec is a trigger as an agent proposes it (POST /v1/triggers, the MCP tool): the body is
// read strictly by ParseSpec.
type Spec struct {
	Source    Source    `json:"source"`
	Condition string    `json:"condition,omitempty"` // CEL over event; "" always holds
	Action    Action    `json:"action"`
	Budget    Budget    `json:"budget"`
	EndsAt    time.Time `json:"ends_at"`          // required: there are no open-ended triggers
	Missed    string    `json:"missed,omitempty"` // MissedSkip (the default) or MissedOnce
	Reason    string    `json:"reason,omitempty"` // why, for the person
}

// ParseSpec reads a proposal strictly: strict JSON (no duplicate member, no trailing data),
// no unknown member, at most MaxSpecBytes. The error names the member, never its value.
func ParseSpec(data []byte) (Spec, error) {
	if len(data) > MaxSpecBytes {
		return Spec{}, fmt.Errorf("the proposal is longer than %d bytes", MaxSpecBytes)
	}
	if _, err := jcs.Parse(data, &jcs.Options{MaxBytes: MaxSpecBytes}); err != nil {
		return Spec{}, errors.New("the proposal must be strict JSON: one object, no duplicate member")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		var ue *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ue) && ue.Field != "":
			return Spec{}, fmt.Errorf("%s: must be a JSON %s", ue.Field, jsonKind(ue.Type.Kind().String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return Spec{}, fmt.Errorf("%s: is not a member of a trigger", strings.TrimPrefix(err.Error(), "json: unknown field "))
		case strings.Contains(err.Error(), "parsing time"):
			return Spec{}, errors.New("ends_at: must be an RFC 3339 time, such as 2027-01-31T18:00:00Z")
		}
		return Spec{}, errors.New("the proposal must be an object of source, condition, action, budget, ends_at, missed and reason")
	}
	return s, nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "int64", "int", "float64":
		return "number"
	case "struct", "map", "ptr":
		return "object"
	case "slice":
		return "array or string"
	}
	return "value of another type"
}

// Trigger is a trigger as the store keeps it, under StateApp and recordKey(ID).
//
// Evolution: members are only added, each with its zero value meaning what a record without
// it meant; a record that does not decode is reported as a fault, never acted on.
type Trigger struct {
	ID         string `json:"id"`
	ClientID   string `json:"client_id"` // the client it fires as, which proposed it
	ClientName string `json:"client_name,omitempty"`
	State      string `json:"state"`
	Stopped    string `json:"stopped,omitempty"` // why it stopped, in plain words

	Source     Source          `json:"source"`
	Condition  string          `json:"condition,omitempty"`
	App        string          `json:"app"`        // the action's app, as proposed
	Method     string          `json:"method"`     // the action's method, as proposed
	Params     json.RawMessage `json:"params"`     // the fixed target: canonical JSON of an object
	Capability string          `json:"capability"` // the capability the action resolved to
	Permission string          `json:"permission"` // the permission it needs
	Query      bool            `json:"query,omitempty"`
	Mandate    string          `json:"mandate"`     // the permission of the mandate it is bound to
	MaxFirings int64           `json:"max_firings"` // the count budget, the sum's bound included
	Amount     *Amount         `json:"amount,omitempty"`
	EndsAt     time.Time       `json:"ends_at"`
	Missed     string          `json:"missed"`
	Reason     string          `json:"reason,omitempty"`

	ConsentID string `json:"consent_id"`         // the proposal the person answered
	TokenID   string `json:"token_id,omitempty"` // the token it fires under, once approved
	// Token is that token's wire form: capgate holds it for the client and never shows it.
	Token string `json:"token,omitempty"`
	// HookSecret is a webhook's secret: shown once, to the client that proposed it.
	HookSecret []byte `json:"hook_secret,omitempty"`

	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Cursor is a schedule's last scheduled time handled (fired, skipped or passed paused):
	// the next pass starts after it.
	Cursor time.Time `json:"cursor,omitzero"`
}

// over reports whether the trigger is stopped for good.
func (t Trigger) over() bool { return t.State == StateStopped }

// live reports whether it counts against its client's MaxTriggersPerClient.
func (t Trigger) live() bool { return !t.over() }

// The states of a firing.
const (
	FiringTaken       = "taken"       // a process took it and decides it
	FiringWaiting     = "waiting"     // the decision asked the person: it waits for the answer
	FiringDone        = "done"        // the action ran and succeeded
	FiringFailed      = "failed"      // the action was allowed and failed
	FiringRefused     = "refused"     // the decision refused it (deny, handoff, consent denied)
	FiringSkipped     = "skipped"     // not run: the condition, a pause, a missed time
	FiringInterrupted = "interrupted" // its process died after the action may have run, which cannot be repeated safely
)

// Firing is one firing as the store keeps it, under firingKey(trigger, key): its row is
// created (store.State's CreateState) before anything is decided, so that one process takes
// it on any number of replicas.
type Firing struct {
	ID      string    `json:"id"`      // FiringID(trigger, key): the call's id
	Trigger string    `json:"trigger"` // the trigger's id
	Key     string    `json:"key"`     // the scheduled time or the event's id
	At      time.Time `json:"at"`      // when it was due: the scheduled time, or when the event came
	State   string    `json:"state"`
	Why     string    `json:"why,omitempty"`  // in plain words
	Code    string    `json:"code,omitempty"` // the call's error code
	// Missed counts the scheduled times a missed-time firing stands for.
	Missed    int64  `json:"missed,omitempty"`
	ConsentID string `json:"consent_id,omitempty"` // waiting: the request it waits on
	// Runner and Lease say which process works on a taken firing, and until when it vouches
	// for it (FiringLease).
	Runner string    `json:"runner,omitempty"`
	Lease  time.Time `json:"lease,omitzero"`
	// AuditFrom is the audit log's length when it was taken: what became of it is recorded
	// after.
	AuditFrom int64     `json:"audit_from,omitempty"`
	Attempt   int       `json:"attempt,omitempty"` // how many times a process took it over
	Updated   time.Time `json:"updated"`
}

// open reports whether the firing is still to be finished: taken or waiting.
func (f Firing) open() bool { return f.State == FiringTaken || f.State == FiringWaiting }

// FiringID is the id of the firing of trigger for key: "fir_" and 32 hex digits of a hash of
// both, the same on every replica, so that every process names one firing alike.
func FiringID(trigger, key string) string {
	h := sha256.Sum256([]byte(trigger + "\x00" + key))
	return "fir_" + hex.EncodeToString(h[:16])
}

// newTriggerID returns "trg_" and 24 hex digits from crypto/rand.
func newTriggerID() string {
	var b [12]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return "trg_" + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a trigger's id.
func ValidID(id string) bool {
	if len(id) != 28 || !strings.HasPrefix(id, "trg_") {
		return false
	}
	for _, c := range id[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func recordKey(id string) string { return "trigger/" + id }

const recordPrefix = "trigger/"

func firingPrefix(trigger string) string { return "firing/" + trigger + "/" }

func firingKey(trigger, key string) string { return firingPrefix(trigger) + key }

// scheduleKey is the key of a scheduled time: "t" and its Unix seconds, zero-padded so that
// keys sort as times.
func scheduleKey(at time.Time) string { return fmt.Sprintf("t%012d", at.Unix()) }

// records reads and writes triggers and firings in one store.
type records struct{ st store.State }

// errCorrupt is a record that does not decode: a fault of the store, not a state.
var errCorrupt = errors.New("trigger: a stored record does not decode")

// ErrNotFound is a trigger that does not exist (or is not the asking client's).
var ErrNotFound = errors.New("no such trigger")

func (r records) get(ctx context.Context, id string) (Trigger, error) {
	b, err := r.st.GetState(ctx, StateApp, recordKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Trigger{}, ErrNotFound
	}
	if err != nil {
		return Trigger{}, err
	}
	var t Trigger
	if json.Unmarshal(b, &t) != nil || t.ID != id {
		return Trigger{}, errCorrupt
	}
	return t, nil
}

func (r records) put(ctx context.Context, t Trigger) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return r.st.PutState(ctx, StateApp, recordKey(t.ID), b)
}

func (r records) create(ctx context.Context, t Trigger) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return r.st.CreateState(ctx, StateApp, recordKey(t.ID), b)
}

// list returns every trigger, ordered by Created then ID; a record that does not decode is
// left out and counted.
func (r records) list(ctx context.Context) ([]Trigger, int, error) {
	m, err := r.st.ListState(ctx, StateApp, recordPrefix)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Trigger, 0, len(m))
	bad := 0
	for k, b := range m {
		var t Trigger
		if json.Unmarshal(b, &t) != nil || recordKey(t.ID) != k {
			bad++
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Trigger) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, bad, nil
}

// takeFiring creates the firing's row: store.ErrExists when another process (or an earlier
// pass) took it.
func (r records) takeFiring(ctx context.Context, f Firing) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return r.st.CreateState(ctx, StateApp, firingKey(f.Trigger, f.Key), b)
}

func (r records) putFiring(ctx context.Context, f Firing) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return r.st.PutState(ctx, StateApp, firingKey(f.Trigger, f.Key), b)
}

// firings returns the trigger's firings, newest (by At, then Key) first.
func (r records) firings(ctx context.Context, trigger string) ([]Firing, error) {
	m, err := r.st.ListState(ctx, StateApp, firingPrefix(trigger))
	if err != nil {
		return nil, err
	}
	out := make([]Firing, 0, len(m))
	for _, b := range m {
		var f Firing
		if json.Unmarshal(b, &f) == nil && f.Trigger == trigger {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Firing) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.Key, a.Key)
	})
	return out, nil
}

func (r records) deleteFiring(ctx context.Context, trigger, key string) error {
	return r.st.PutState(ctx, StateApp, firingKey(trigger, key), nil)
}

func (r records) delete(ctx context.Context, id string) error {
	return r.st.PutState(ctx, StateApp, recordKey(id), nil)
}
