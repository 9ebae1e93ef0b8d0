package a2a

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/capgate/capgate/internal/store"
)

// StateApp is the app id under which tasks are kept in the store's app state (store.State),
// beside capgate's other own state ("capgate.web", "capgate.undo").
const StateApp = "capgate.a2a"

// record is a task as the store keeps it, under StateApp and key(client, id). It holds the
// task's state and nothing of its content: neither the capability, nor the params, nor the
// result, so that what a status can say is bounded by what is kept.
//
// Evolution: members are only added, each with its zero value meaning what a record without
// it meant; a record that does not decode is reported as a fault, never as a state.
type record struct {
	ID        string           `json:"id"`
	ContextID string           `json:"context_id"`
	State     a2asdk.TaskState `json:"state"`
	At        time.Time        `json:"at"`      // when State was set
	Created   time.Time        `json:"created"` // when the task was given
	// Runner is the process that runs the task (Handler's instance), while it is not over.
	Runner string `json:"runner,omitempty"`
	// Lease is until when Runner vouches that the task runs: a record not over, whose
	// runner is not this process and whose lease has run out, was interrupted.
	Lease time.Time `json:"lease,omitzero"`
}

// key is the record's key: the client's id hex-encoded, so that no client's prefix is
// another's (a client id may hold any byte), then the task id.
func key(clientID, taskID string) string { return prefix(clientID) + taskID }

// prefix is the keys of one client's tasks.
func prefix(clientID string) string { return "task/" + hex.EncodeToString([]byte(clientID)) + "/" }

// task is the record as A2A shows it: the ids, the kind and the state with its time, and
// nothing else (no history, artifacts, status message or metadata), which is all another
// assistant may learn of a task.
func (r record) task() *a2asdk.Task {
	at := r.At.UTC()
	return &a2asdk.Task{ID: a2asdk.TaskID(r.ID), ContextID: r.ContextID, Status: a2asdk.TaskStatus{State: r.State, Timestamp: &at}}
}

// over reports whether the task's state is final: completed, rejected, failed or canceled.
func (r record) over() bool { return r.State.Terminal() }

// interrupted reports whether a record read from the store stands for a task whose run has
// ended without saying so: not over, and either this process's (whose runs are all known to
// it, and this is not one of them) or its lease run out. Another process's task, whose lease
// holds, still runs there.
func (r record) interrupted(instance string, now time.Time) bool {
	return !r.over() && (r.Runner == instance || r.Runner == "" || !now.Before(r.Lease))
}

// records reads and writes the records of one store. It is safe for concurrent use.
type records struct {
	st store.State
}

// errCorrupt is a record that does not decode: a fault of the store, not a state.
var errCorrupt = errors.New("a2a: a task record does not decode")

func (s records) get(ctx context.Context, clientID, taskID string) (record, error) {
	b, err := s.st.GetState(ctx, StateApp, key(clientID, taskID))
	if err != nil {
		return record{}, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil || r.ID != taskID {
		return record{}, errCorrupt
	}
	return r, nil
}

// put writes r, on a context of its own bounded by StoreTimeout: a task's last state is
// written when its own context has ended (canceled, or the gateway closing).
func (s records) put(ctx context.Context, clientID string, r record) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StoreTimeout)
	defer cancel()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.st.PutState(ctx, StateApp, key(clientID, r.ID), b)
}

// create writes the new record r: store.ErrExists when its id is taken.
func (s records) create(ctx context.Context, clientID string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.st.CreateState(ctx, StateApp, key(clientID, r.ID), b)
}

// list returns the client's records, oldest first; one that does not decode is returned as
// an interrupted record of its key's id, so that it can be forgotten like one that is over.
func (s records) list(ctx context.Context, clientID string) ([]record, error) {
	m, err := s.st.ListState(ctx, StateApp, prefix(clientID))
	if err != nil {
		return nil, err
	}
	out := make([]record, 0, len(m))
	p := prefix(clientID)
	for k, b := range m {
		var r record
		if json.Unmarshal(b, &r) != nil || key(clientID, r.ID) != k {
			r = record{ID: k[len(p):], State: a2asdk.TaskStateFailed}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b record) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s records) remove(ctx context.Context, clientID, taskID string) error {
	return s.st.PutState(ctx, StateApp, key(clientID, taskID), nil)
}

// room makes room for one more of the client's tasks: when MaxTasksPerClient are kept, it
// forgets the oldest that are over (or were interrupted: their state is final too) until one
// fits. errFull when none can go, because all run.
func (s records) room(ctx context.Context, clientID, instance string, now time.Time, running func(id string) bool) error {
	rs, err := s.list(ctx, clientID)
	if err != nil {
		return err
	}
	excess := len(rs) - MaxTasksPerClient + 1
	for _, r := range rs {
		if excess <= 0 {
			break
		}
		if running(r.ID) || !(r.over() || r.interrupted(instance, now)) {
			continue
		}
		if err := s.remove(ctx, clientID, r.ID); err != nil {
			return err
		}
		excess--
	}
	if excess > 0 {
		return errFull
	}
	return nil
}

var errFull = fmt.Errorf("%w: the client's tasks that are kept all run: ask for their status, and give this task when one is over", a2asdk.ErrServerError)
