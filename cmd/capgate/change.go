package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

// operatorChange makes a change from the command line directly in the data folder's store,
// recorded in its audit log before and after (gateway.OperatorLog.ChangeThen), by approver().
// A change that fails because what it names does not exist is recorded with notFound.
func operatorChange(ctx context.Context, cmd *cobra.Command, st store.Audit, dir string, rec audit.Record, narrows bool,
	notFound string, change func() error) error {
	return recordedChange(ctx, cmd, st, dir, rec, narrows, notFound, func(*audit.Record) error { return change() })
}

// recordedChange is operatorChange for a change that fills in its outcome record
// (gateway.OperatorLog.ChangeThen).
func recordedChange(ctx context.Context, cmd *cobra.Command, st store.Audit, dir string, rec audit.Record, narrows bool,
	notFound string, change func(out *audit.Record) error) error {
	l := gateway.OpenOperatorLog(st, dir, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	warn := func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "capgate: %s: %v\n", rec.Action, err) }
	err := l.ChangeThen(ctx, approver(), rec, narrows, change, operator.CodeOf(notFound), warn)
	if cerr := l.Close(); cerr != nil {
		warn(cerr)
	}
	return err
}

// pluginChange is recordedChange for a plugin command, which works on the data folder's
// lockfile and needs no store: with a store in the folder (a gateway ran on it), the change
// is recorded in its audit log, and a widening is not made unrecorded; with none, there is no
// log to record in, and the change is made as it is (the gateway, once it runs, serves what
// the lockfile holds).
func pluginChange(cmd *cobra.Command, g *globals, hf hostFlags, rec audit.Record, narrows bool,
	change func(out *audit.Record) error) error {
	ctx := context.Background()
	l, err := g.load(hf)
	if err != nil {
		return err
	}
	st, err := gateway.OpenStore(ctx, l.dataDir, l.store, false)
	if errors.Is(err, gateway.ErrNoStore) {
		return change(&rec)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return recordedChange(ctx, cmd, st, l.dataDir, rec, narrows, "INVALID_REQUEST", change)
}

// storeTokens revokes in the store directly, for a command that works on the data folder's
// store beside a running gateway (whose next call checks the token at use).
type storeTokens struct{ st store.Store }

func (s storeTokens) Revoke(ctx context.Context, id string) error {
	return s.st.Revoke(ctx, id, time.Now())
}

// operatorService is the operator Service of a command working on the data folder's store
// directly: its changes go to the folder's audit log as the gateway's do. close writes what
// is pending and signs a checkpoint when the folder holds the gateway's key.
func operatorService(cmd *cobra.Command, st store.Store, dir string, cs *consent.Service) (ops *operator.Service, close func()) {
	l := gateway.OpenOperatorLog(st, dir, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	warn := func(action string, err error) { fmt.Fprintf(cmd.ErrOrStderr(), "capgate: %s: %v\n", action, err) }
	ops = &operator.Service{Audit: l.Recorder(), Consent: cs, Tokens: storeTokens{st}, Mandates: st, Warn: warn}
	return ops, func() {
		if err := l.Close(); err != nil {
			warn("audit", err)
		}
	}
}

// onTheCommandLine is who changes something from the command line: the person answering,
// the operator changing the gateway.
func onTheCommandLine(who string) operator.Actor {
	return operator.Actor{ID: approver(), Who: who, Where: "from the command line"}
}
