package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips returns how many database round trips the store has made since Open, for
// benchmarks and for the gateway's own measurements. It counts, through a pgx tracer on every
// pooled connection:
//   - each Query, QueryRow and Exec as one, BEGIN and COMMIT included (each is an Exec);
//   - each batch as one;
//   - each statement prepared on a connection as one more: pgx prepares a statement the first
//     time a connection runs it and reuses it after, so a hot method costs one extra round trip
//     once per pooled connection, then one per call;
//   - each liveness ping the pool sends when it hands out a connection idle for more than a
//     second.
//
// It does not count opening connections (TCP, TLS and authentication exchanges) or Watch's
// connection, which waits for the server rather than asking it.
func (s *Store) RoundTrips() int64 { return s.trips.Load() }

// tripCounter is the pgx tracer behind RoundTrips.
type tripCounter struct{ n *atomic.Int64 }

var (
	_ pgx.QueryTracer   = tripCounter{}
	_ pgx.BatchTracer   = tripCounter{}
	_ pgx.PrepareTracer = tripCounter{}
)

func (c tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (tripCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

// TracePrepareEnd counts a prepare that went to the server; one pgx found already prepared on
// the connection cost nothing.
func (c tripCounter) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		c.n.Add(1)
	}
}
