// Package postgres is the store for several gateway replicas sharing one PostgreSQL database:
// a store.Store, and a store.Watcher, whose every method is exact across processes, so that the
// replicas behave as one gateway.
//
// # Pointing it at a database
//
// Open takes a libpq connection string:
//
//	postgres://capgate:secret@db.example:5432/capgate?sslmode=verify-full&search_path=capgate
//
// The tables live in the schema the search_path selects (its first schema that exists), which
// must exist: Open makes tables, functions and triggers, not schemas, so the database's owner
// creates the schema once ("CREATE SCHEMA capgate AUTHORIZATION capgate") and every replica
// names it. Stores in different schemas of one database are independent, notifications
// included; the tests give each test a schema of its own (package pgtest). pgxpool's own
// settings ride in the same string (pool_max_conns, default the larger of 4 and the number of
// CPUs).
//
// Open brings the schema up to date with numbered migration steps recorded in
// schema_migrations, each applied once in its own transaction. Each step first takes a
// transaction-scoped advisory lock keyed by the schema's name, so replicas starting at the
// same moment on a new database migrate it exactly once: the first applies the step while the
// others wait, then find it applied. A schema newer than the code is refused. Released steps
// are never edited; changes are new steps.
//
// # Schema and exactness
//
// Every text key is COLLATE "C", so lists come out in byte order. Times are bigint Unix
// nanoseconds, NULL for the zero time, as in the SQLite store; byte fields are bytea. Text
// cannot hold NUL characters or invalid UTF-8 (PostgreSQL refuses them).
//
// Each method is a single statement, in the implicit transaction PostgreSQL gives it (PutApp
// may run its statement again: see there), so a write that returned nil is committed (with
// the server's default synchronous_commit, durable too) and a failed one left nothing behind. The read-then-write methods are exact under any
// number of processes:
//   - TakeUse calls capgate_take_use, a PL/pgSQL function made by a migration, which locks the
//     token's chain of ancestors FOR UPDATE root first (the order every caller takes, so
//     uses of tokens sharing an ancestor queue instead of deadlocking), checks every link for
//     revocation, expiry and remaining uses, and counts the use against each;
//   - Revoke calls capgate_revoke, which revokes the token's descendants with a recursive
//     query, locking them in the same order, and passes again until a pass finds nothing, so
//     a token derived meanwhile is caught too;
//   - AnswerConsent is an UPDATE ... WHERE state = 'pending', a compare-and-set: of several
//     answers one wins, and the others find the row no longer pending;
//   - AppendAudit is one INSERT ... SELECT FROM unnest(...) guarded by the head it must
//     follow; a writer that appended first shows as a moved head or, when it committed while
//     the statement ran, as a duplicate Seq refused by the primary key: both are ErrConflict,
//     and the log stays without gaps;
//   - PutToken reads the parent FOR SHARE in the same statement, so a token derived from one
//     being revoked waits and is put revoked.
//
// # Round trips
//
// The hot methods (TakeUse, GetToken, AppendAudit, GetConsent, Revision) make one round trip
// each: one statement, with no BEGIN or COMMIT of their own, and pgx prepares each statement
// once per connection and reuses it. RoundTrips counts them (it says exactly what it counts),
// for benchmarks and for the gateway's report of round trips per call.
//
// # Notifications
//
// Triggers raise a one-row revision counter (Revision) on every revocation and every change to
// apps, clients and mandates, and NOTIFY on a channel named after the schema (capgate_channel)
// with the topic "revision"; putting a consent request or changing its state notifies
// "consent". Watch LISTENs on that channel on a connection of its own, outside the pool, so
// that a replica hears another's changes as they commit; after a lost connection it connects
// again, backing off, and tells its caller every topic once, since changes may have been missed
// meanwhile.
package postgres
