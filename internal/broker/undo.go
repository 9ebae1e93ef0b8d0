package broker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/sdk"
)

// undoApp is the state namespace where undo records are kept.
const undoApp = "capgate.undo"

type undoRecord struct {
	AppID        string `json:"app_id"`
	Capability   string `json:"capability"`
	ClientID     string `json:"client_id"`
	HandlerToken string `json:"handler_token"`
	Until        int64  `json:"until"`             // Unix milliseconds
	CallID       string `json:"call_id,omitempty"` // the call it undoes; "" in records written before it was kept
}

func (b *Broker) saveUndo(ctx context.Context, r undoRecord) (string, error) {
	id := newID("undo_")
	data, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return id, b.o.Store.PutState(ctx, undoApp, id, data)
}

// Undo errors, each with the code the IPC answer carries.
var (
	ErrUndoUnknown = errors.New("no such undo token")
	ErrUndoExpired = errors.New("the undo window has passed")
	ErrUndoClient  = errors.New("the undo token belongs to another client")
	ErrUndoNotSupp = errors.New("the app cannot undo")
)

// Undo reverts a call through its handler, within the call's undo window, for the client that
// made it. The undo token is spent whether or not the handler succeeds.
func (b *Broker) Undo(ctx context.Context, caller Caller, undoToken string) error {
	r, err := b.undoRecord(ctx, undoToken)
	if err != nil {
		return err
	}
	if r.ClientID != caller.ClientID {
		return ErrUndoClient
	}
	rec := audit.Record{Action: "undo", App: r.AppID, Capability: r.Capability, ClientID: caller.ClientID,
		Decision: "allow", Kind: "decision", Result: "undo requested", CallID: undoToken}
	return b.undo(ctx, r, undoToken, rec, caller.ClientID)
}

// Undoable is a call that can still be undone: its answer carried an undo token and its undo
// window is open.
type Undoable struct {
	CallID     string
	AppID      string
	Capability string
	ClientID   string // the client that made the call
	Until      time.Time
}

// Undoable returns the calls that can still be undone at the broker's now, by call id: their
// window is open and their app's handler can undo. The records of windows that have passed
// are deleted on the way, since they can never be used.
func (b *Broker) Undoable(ctx context.Context) (map[string]Undoable, error) {
	m, err := b.o.Store.ListState(ctx, undoApp, "")
	if err != nil {
		return nil, err
	}
	now := b.o.Now().UnixMilli()
	out := map[string]Undoable{}
	for tok, data := range m {
		var r undoRecord
		if err := json.Unmarshal(data, &r); err != nil {
			continue
		}
		if now >= r.Until {
			_ = b.o.Store.PutState(ctx, undoApp, tok, nil)
			continue
		}
		if _, can := b.o.Handlers[r.AppID].(sdk.Undoer); can && r.CallID != "" {
			out[r.CallID] = Undoable{CallID: r.CallID, AppID: r.AppID, Capability: r.Capability, ClientID: r.ClientID, Until: time.UnixMilli(r.Until)}
		}
	}
	return out, nil
}

// UndoCall reverts the call callID on the person's behalf (by names where they asked, such
// as the approval page), within its undo window, whichever client made it: the person may
// undo whatever was done in their name. It takes the same path as Undo: the undo token is
// spent, a decision record is written before the handler runs (and nothing runs without
// it), and an outcome record after. A call with no undo token left is ErrUndoUnknown.
func (b *Broker) UndoCall(ctx context.Context, callID, by string) error {
	if callID == "" {
		return ErrUndoUnknown
	}
	m, err := b.o.Store.ListState(ctx, undoApp, "")
	if err != nil {
		return err
	}
	for tok, data := range m {
		var r undoRecord
		if json.Unmarshal(data, &r) != nil || r.CallID != callID {
			continue
		}
		rec := audit.Record{Action: "undo", App: r.AppID, Capability: r.Capability, ClientID: by,
			Decision: "allow", Kind: "decision", Result: "undo requested", CallID: callID,
			Explanation: "the person undid a call of client " + r.ClientID}
		return b.undo(ctx, r, tok, rec, r.ClientID)
	}
	return ErrUndoUnknown
}

// undoRecord reads the undo record of undoToken.
func (b *Broker) undoRecord(ctx context.Context, undoToken string) (undoRecord, error) {
	data, err := b.o.Store.GetState(ctx, undoApp, undoToken)
	if errors.Is(err, store.ErrNotFound) {
		return undoRecord{}, ErrUndoUnknown
	}
	if err != nil {
		return undoRecord{}, err
	}
	var r undoRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return undoRecord{}, ErrUndoUnknown
	}
	return r, nil
}

// undo spends undoToken and reverts its call r through the app's handler, recording rec (a
// decision) before and its outcome after; clientID is the client the handler is told of.
func (b *Broker) undo(ctx context.Context, r undoRecord, undoToken string, rec audit.Record, clientID string) error {
	if b.o.Now().UnixMilli() >= r.Until {
		_ = b.o.Store.PutState(ctx, undoApp, undoToken, nil)
		return ErrUndoExpired
	}
	h, ok := b.o.Handlers[r.AppID]
	u, can := h.(sdk.Undoer)
	if !ok || !can {
		return ErrUndoNotSupp
	}
	if err := b.o.Store.PutState(ctx, undoApp, undoToken, nil); err != nil {
		return err
	}
	if _, err := b.o.Audit.Append(ctx, rec); err != nil {
		return errors.New("the undo was refused: its audit record could not be written")
	}
	ic := sdk.InvocationContext{Source: sdk.SourceUser, Timestamp: b.o.Now(), AppID: r.AppID, ClientID: clientID, CallID: undoToken}
	uctx, cancel := context.WithTimeout(ctx, b.o.DefaultTimeout)
	defer cancel()
	err := u.Undo(uctx, r.Capability, r.HandlerToken, ic)
	rec.Kind, rec.Result = "outcome", "success"
	if err != nil {
		rec.Result, rec.Code = "error", sdk.AsError(err, r.Capability).Code.GatewayCode()
	}
	_, _ = b.o.Audit.Append(ctx, rec)
	return err
}
