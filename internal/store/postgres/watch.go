package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/capgate/capgate/internal/store"
)

// Watch calls fn with the topic of each change committed to the store's schema by any process
// (store.TopicRevision, store.TopicConsent) until ctx ends, then returns ctx's error; it
// returns an error at once if fn is nil, and when the store is closed.
//
// It holds a connection of its own, outside the pool, that LISTENs on the schema's channel
// (capgate_channel in the schema: the schema's name is part of it, so stores in other schemas
// are not heard); the schema's triggers NOTIFY it as their transactions commit. When the
// connection is lost, or does not answer a ping after watchPingInterval without a
// notification, Watch connects again, waiting watchRetryMin and then twice as long after
// each failure up to watchRetryMax, and once listening again calls fn with every topic,
// since changes may have been missed meanwhile. The first connection failing counts as a
// loss; a first connection that succeeds does not call fn until a change comes. fn is called
// on the goroutine that called Watch, one call at a time, and must not block.
func (s *Store) Watch(ctx context.Context, fn func(topic string)) error {
	if fn == nil {
		return errors.New("postgres: watch: nil fn")
	}
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // Close ends the watch
		select {
		case <-s.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	ended := func() error {
		if err := parent.Err(); err != nil {
			return err
		}
		return errClosed
	}

	missed := false
	delay := watchRetryMin
	for {
		// A lost connection is not an error to return: Watch has no one to tell but fn,
		// which hears of it as a call with every topic once Watch listens again.
		if s.listen(ctx, fn, missed) {
			delay = watchRetryMin
		}
		if ctx.Err() != nil {
			return ended()
		}
		missed = true
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ended()
		case <-t.C:
		}
		delay = min(2*delay, watchRetryMax)
	}
}

// listen connects, LISTENs on the schema's channel, calls fn with every topic if missed, and
// then with each notification until the connection fails or ctx ends. It reports whether it
// got as far as listening.
func (s *Store) listen(ctx context.Context, fn func(topic string), missed bool) (listened bool) {
	conn, err := pgx.ConnectConfig(ctx, s.watchConfig)
	if err != nil {
		return false
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), watchCloseTimeout)
		defer cancel()
		conn.Close(cctx)
	}()
	// The channel of the schema that holds the store's tables, as the connection's
	// search_path finds them, not merely the first schema in that path.
	var channel string
	if err := conn.QueryRow(ctx, `SELECT capgate_channel(n.nspname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = 'revision'::regclass`).Scan(&channel); err != nil {
		return false
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false
	}
	if missed {
		fn(store.TopicRevision)
		fn(store.TopicConsent)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, watchPingInterval)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Channel == channel && (n.Payload == store.TopicRevision || n.Payload == store.TopicConsent) {
				fn(n.Payload)
			}
			continue
		case ctx.Err() != nil:
			return true
		case (pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded)) && !conn.IsClosed():
			// Quiet for a while: make sure the connection is still there.
			pctx, cancel := context.WithTimeout(ctx, watchPingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return true
	}
}
