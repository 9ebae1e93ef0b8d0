package broker

import (
	"context"
	"encoding/json"
	"errors"

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
	Until        int64  `json:"until"` // Unix milliseconds
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
	data, err := b.o.Store.GetState(ctx, undoApp, undoToken)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUndoUnknown
	}
	if err != nil {
		return err
	}
	var r undoRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return ErrUndoUnknown
	}
	if r.ClientID != caller.ClientID {
		return ErrUndoClient
	}
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
	rec := audit.Record{Action: "undo", App: r.AppID, Capability: r.Capability, ClientID: caller.ClientID,
		Decision: "allow", Kind: "decision", Result: "undo requested", CallID: undoToken}
	if _, err := b.o.Audit.Append(ctx, rec); err != nil {
		return errors.New("the undo was refused: its audit record could not be written")
	}
	ic := sdk.InvocationContext{Source: sdk.SourceUser, Timestamp: b.o.Now(), AppID: r.AppID, ClientID: caller.ClientID, CallID: undoToken}
	uctx, cancel := context.WithTimeout(ctx, b.o.DefaultTimeout)
	defer cancel()
	err = u.Undo(uctx, r.Capability, r.HandlerToken, ic)
	rec.Kind, rec.Result = "outcome", "success"
	if err != nil {
		rec.Result, rec.Code = "error", sdk.AsError(err, r.Capability).Code.GatewayCode()
	}
	_, _ = b.o.Audit.Append(ctx, rec)
	return err
}
