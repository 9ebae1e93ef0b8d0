package postgres

import "time"

// putAppAttempts is how many times PutApp runs its statement when it meets a taken alias,
// which may be the same app inserted by another process at the same moment (PutApp says why):
// the second attempt finds that insert committed; a third covers a process deleting and
// another re-inserting the app meanwhile. A real conflict costs the extra attempts.
const putAppAttempts = 3

// pingAfterIdle is how long a pooled connection may sit idle before the pool checks it with a
// ping on its way out (pgxpool's default): a connection idle that long may have been cut by a
// proxy or a restart, and a failed ping costs one round trip where a failed query costs the
// caller an error.
const pingAfterIdle = time.Second

// Watch's connection to the database.
const (
	// watchRetryMin and watchRetryMax bound the wait before Watch connects again after losing
	// its connection: short at first, so that a restart of the server is noticed at once,
	// doubling up to the maximum, so that a database that is down is not hammered.
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
	// watchPingInterval is how long Watch waits for a notification before it pings the
	// server: a connection cut without a word (a dead peer, a dropped route) would otherwise
	// go unnoticed until TCP keepalive gives up, minutes later, and changes would go unheard.
	watchPingInterval = 30 * time.Second
	// watchPingTimeout is how long that ping may take before the connection is given up.
	watchPingTimeout = 10 * time.Second
	// watchCloseTimeout bounds closing a connection Watch gives up, which tells the server
	// goodbye and must not hang on a dead peer.
	watchCloseTimeout = 5 * time.Second
)

// minServerVersion is the oldest PostgreSQL the schema runs on (server_version_num): 11 brought
// EXECUTE FUNCTION in triggers, starts_with and hashtextextended.
const minServerVersion = 110000

// rollbackTimeout bounds the ROLLBACK that ends a failed sequenced append, which runs even
// when the caller's context has ended: a connection must not go back to the pool inside a
// transaction holding the audit log's lock.
const rollbackTimeout = 5 * time.Second
