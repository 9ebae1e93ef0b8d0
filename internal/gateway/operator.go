package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/opsock"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
)

// OperatorLog records in the audit log what a person or operator changes from the command
// line directly in a data folder's store (answering a consent request, revoking a token),
// as the approval page records its own changes: a decision record before the change and an
// outcome record after it, on the same hash chain as the gateway's records (several
// writers share one store safely), in the same JSON-lines mirror and head file. When the
// gateway's key is in the folder, closing it signs a checkpoint of the new head.
type OperatorLog struct {
	w *audit.Writer
}

// OpenOperatorLog opens the operator log of the data folder dir on st. Close it when done.
// log receives what goes wrong beside the records (nil: slog.Default()).
func OpenOperatorLog(st store.Audit, dir string, log *slog.Logger) *OperatorLog {
	if log == nil {
		log = slog.Default()
	}
	opts := &audit.Options{MirrorPath: filepath.Join(dir, AuditFile), HeadPath: filepath.Join(dir, HeadFile), Logger: log}
	k, err := keys.LoadPrivateKey(filepath.Join(dir, KeyFile))
	switch {
	case err == nil:
		opts.CheckpointKey = k
	case errors.Is(err, os.ErrNotExist):
		// No key here (no gateway has run on this folder yet, or its replicas keep theirs
		// elsewhere): the gateway checkpoints these records with its next.
	default:
		// The records matter more than the checkpoint: write them, and say why none is signed.
		log.Warn("gateway: the gateway's key cannot be read; the operator's records get no checkpoint of their own", "err", err)
	}
	return &OperatorLog{w: audit.NewWriter(st, opts)}
}

// Close writes what is pending, signs a checkpoint when it holds the key, and closes.
func (l *OperatorLog) Close() error { return l.w.Close() }

// Recorder is the log as the changes of package operator write to it.
func (l *OperatorLog) Recorder() operator.Recorder { return l.w }

// serveOperator serves the operator socket (DATA/operator.sock) for as long as the serve,
// with during, and returns its path ("" when it is not served). A socket another live
// gateway on this folder answers is left to it: its changes reach the shared store all the
// same, and this replica sees them at its next look.
func (g *Gateway) serveOperator(during func(func(context.Context))) string {
	path := opsock.Path(g.cfg.DataDir)
	ln, err := opsock.Listen(path)
	switch {
	case errors.Is(err, opsock.ErrInUse):
		g.log.Warn("the data folder's operator socket is served by another capgate", "socket", path)
		return ""
	case err != nil:
		g.log.Warn("the operator socket cannot be served: operator commands work on the store directly", "socket", path, "err", err)
		return ""
	}
	// A tool server added, removed or accepted through the socket is connected, stopped or
	// listed again before the command returns.
	srv := opsock.New(g.Operator, func(ctx context.Context) {
		if err := g.tools.Sync(ctx); err != nil {
			g.log.Warn("tool server sync failed", "err", err)
		}
	}, g.log)
	// An app registered to run out of process is started before the command returns.
	srv.ProvidersChanged = g.syncProviders
	during(func(ctx context.Context) {
		if err := srv.Serve(ctx, ln, DrainTimeout); err != nil && !errors.Is(err, net.ErrClosed) {
			g.log.Warn("the operator socket stopped", "err", err)
		}
	})
	return path
}
