package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/opsock"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// changeTarget says where an operator command makes its change: the data folder (--data),
// the trusted keys an app is registered with, and whether a folder with no store yet gets
// one (adding a client or registering an app before the first serve).
type changeTarget struct {
	data, trustedDir string
	create           bool
}

// changes is where an operator command makes its changes: through the gateway serving the
// data folder when one answers its operator socket (so that its caches and children see the
// change at once), else on the folder's store directly, recorded in its audit log as the
// gateway records its own.
type changes struct {
	opsock.Changes
	viaGateway bool
	close      func()
}

// openChanges opens where the command's changes go (changes). Through a running gateway,
// the gateway's own trusted keys register an app.
func (g *globals) openChanges(ctx context.Context, cmd *cobra.Command, t changeTarget) (*changes, error) {
	l, err := g.load(hostFlags{dataDir: t.data, trustedDir: t.trustedDir})
	if err != nil {
		return nil, err
	}
	if l.dataDir == "" {
		return nil, usageErr("no data folder: set --data, CAPGATE_DATA_DIR or data_dir")
	}
	if c, err := opsock.Dial(opsock.Path(l.dataDir)); err == nil {
		return &changes{Changes: c, viaGateway: true, close: c.Close}, nil
	}
	st, dir, err := g.openStore(ctx, t.data, t.create)
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(ctx, st, gateway.AppKeys(dir, l.trustedDir))
	if err != nil {
		st.Close()
		return nil, err
	}
	ops, done := operatorService(cmd, st, dir)
	ops.Registry, ops.Programs = reg, st
	ops.ToolServers = &toolserver.Env{Store: st, Registry: reg, DataDir: dir, Version: version, Sandbox: childSandbox(ctx, l)}
	return &changes{Changes: ops, close: func() { done(); st.Close() }}, nil
}

// childSandbox is the sandbox a command starts its children in (a stdio tool server it lists),
// as capgate serve would: the configured mode (sandbox in the configuration file,
// CAPGATE_SANDBOX), on by default; nil when none can be made, which refuses them.
func childSandbox(ctx context.Context, l loaded) *sandbox.Sandbox {
	mode, err := sandbox.ParseMode(config.Resolve("", config.EnvSandbox, l.file.Sandbox, ""))
	if err != nil {
		return nil
	}
	box, err := sandbox.Open(ctx, mode)
	if err != nil {
		return nil
	}
	return box
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
func operatorService(cmd *cobra.Command, st store.Store, dir string) (ops *operator.Service, close func()) {
	l := gateway.OpenOperatorLog(st, dir, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	ops = &operator.Service{Audit: l.Recorder(), Consent: consent.New(st, &consent.Options{Surface: true}), Tokens: storeTokens{st},
		Mandates: st, Clients: st, Warn: warnOn(cmd)}
	return ops, func() {
		if err := l.Close(); err != nil {
			warnOn(cmd)("audit", err)
		}
	}
}

// warnOn tells the command's standard error what went wrong beside a change.
func warnOn(cmd *cobra.Command) func(action string, err error) {
	return func(action string, err error) { fmt.Fprintf(cmd.ErrOrStderr(), "capgate: %s: %v\n", action, err) }
}

// pluginService is the operator Service of a plugin command, which works on the data
// folder's lockfile: with a store in the folder (a gateway ran on it), the change is recorded
// in its audit log, and a widening is not made unrecorded; with none, there is no log to
// record in, and the change is made as it is (the gateway, once it runs, serves what the
// lockfile holds).
func (g *globals) pluginService(cmd *cobra.Command, hf hostFlags) (*operator.Service, func(), error) {
	l, err := g.load(hf)
	if err != nil {
		return nil, nil, err
	}
	h, err := l.pluginHost()
	if err != nil {
		return nil, nil, err
	}
	st, err := gateway.OpenStore(context.Background(), l.dataDir, l.store, false)
	if errors.Is(err, gateway.ErrNoStore) {
		return &operator.Service{Plugins: h, NoAuditLog: true, Warn: warnOn(cmd)}, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ops, done := operatorService(cmd, st, l.dataDir)
	ops.Plugins, ops.Programs = h, st
	return ops, func() { done(); st.Close() }, nil
}

// onTheCommandLine is who changes something from the command line: the person answering,
// the operator changing the gateway.
func onTheCommandLine(who string) operator.Actor {
	return operator.Actor{ID: approver(), Who: who, Where: "from the command line"}
}

// byTheOperator is the operator, from the command line.
func byTheOperator() operator.Actor { return onTheCommandLine("the operator") }

// onChanges runs fn on where the command's changes go (openChanges), closing it after.
func (g *globals) onChanges(cmd *cobra.Command, t changeTarget, fn func(ctx context.Context, ch *changes) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ch, err := g.openChanges(ctx, cmd, t)
	if err != nil {
		return err
	}
	defer ch.close()
	return fn(ctx, ch)
}
