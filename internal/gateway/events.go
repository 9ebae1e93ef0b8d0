package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/apps/syslog"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// logEventQueue bounds the error entries waiting to be told to the triggers: a burst of
// errors beyond it is dropped (the log keeps them), so that logging never waits on a trigger.
const logEventQueue = 256

// logEvent is one error entry of capgate's log, as the syslog app's entry.error event.
type logEvent struct {
	id    string
	entry syslog.Entry
}

// followLogErrors makes every error entry of capgate's own log the syslog app's event
// entry.error, which triggers on it take (trigger.Engine.Emit), from a goroutine of the
// gateway's: the logging goroutine only queues it.
func (g *Gateway) followLogErrors() {
	q := make(chan logEvent, logEventQueue)
	g.ring.OnError(func(id string, e syslog.Entry) {
		select {
		case q <- logEvent{id, e}:
		default:
		}
	})
	g.spawn(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-q:
				payload, err := json.Marshal(ev.entry)
				if err != nil {
					continue
				}
				// Never logged as an error: that would be an event of its own.
				if _, err := g.Triggers.Emit(ctx, syslog.AppID, syslog.EventError, "log:"+ev.id, payload); err != nil && ctx.Err() == nil {
					g.log.Warn("triggers: the log's error entry was not told to its triggers", "err", err)
				}
			}
		}
	})
}

// followFileChanges makes the changes in the workspace the files app's event file.changed,
// while an active trigger waits for it: the folder is scanned every files.WatchInterval and
// each scan is held against the one before (the first one after a trigger appears is the
// baseline, and reports nothing).
func (g *Gateway) followFileChanges(ctx context.Context) {
	tick := time.NewTicker(files.WatchInterval)
	defer tick.Stop()
	var last files.Snapshot
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if g.notStarted[files.AppID] {
			return
		}
		listens, err := g.Triggers.Listens(ctx, files.AppID, files.EventChanged)
		if err != nil || !listens {
			last = nil
			continue
		}
		snap, err := files.Scan(g.workspace, 0)
		if err != nil {
			if !warned {
				g.log.Warn("triggers: the workspace cannot be watched for the files app's file.changed", "err", err)
				warned = true
			}
			last = nil
			continue
		}
		warned = false
		if last != nil {
			for _, f := range files.Diff(last, snap) {
				payload, err := json.Marshal(f.Change)
				if err != nil {
					continue
				}
				if _, err := g.Triggers.Emit(ctx, files.AppID, files.EventChanged, f.ID(f.Stat), payload); err != nil && ctx.Err() == nil {
					g.log.Warn("triggers: a change in the workspace was not told to its triggers", "err", err)
				}
			}
		}
		last = snap
	}
}

// appEvents takes the events the provider of the app appID emits on its own, as that app's:
// trigger.Engine.Emit checks the type against the app's manifest and the payload against its
// schema. A refusal goes back to the provider as invalid params, naming why.
func (g *Gateway) appEvents(appID string) func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error {
	return func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error {
		_, err := g.Triggers.Emit(ctx, appID, eventType, eventID, payload)
		if errors.Is(err, trigger.ErrInvalid) {
			return sdk.InvalidParams(manifest.Problems{{Path: "event", Rule: strings.TrimPrefix(err.Error(), trigger.ErrInvalid.Error()+": ")}})
		}
		if err != nil {
			return sdk.ExecutionFailed("capgate could not take the event", true)
		}
		return nil
	}
}
