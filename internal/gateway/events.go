package gateway

import (
	"context"
	"encoding/json"

	"github.com/capgate/capgate/internal/apps/syslog"
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
