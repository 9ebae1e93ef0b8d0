package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// migrations is the schema, step by step (store.Migration).
var migrations = []store.Migration{
	{Version: 1, Name: "initial schema", SQL: `
CREATE TABLE apps (
	app_id   TEXT PRIMARY KEY,
	alias    TEXT NOT NULL,
	tier     INTEGER NOT NULL,
	reason   TEXT NOT NULL,
	manifest BLOB NOT NULL,
	enabled  INTEGER NOT NULL,
	updated  INTEGER
) STRICT;
CREATE UNIQUE INDEX apps_alias ON apps(alias) WHERE alias <> '';

CREATE TABLE clients (
	id        TEXT PRIMARY KEY,
	name      TEXT NOT NULL UNIQUE,
	key_hash  TEXT NOT NULL,
	trust     TEXT NOT NULL,
	never_ask INTEGER NOT NULL,
	unix_uid  INTEGER,
	created   INTEGER,
	disabled  INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX clients_key_hash ON clients(key_hash) WHERE key_hash <> '';
CREATE UNIQUE INDEX clients_unix_uid ON clients(unix_uid);

CREATE TABLE tokens (
	id         TEXT PRIMARY KEY,
	client_id  TEXT NOT NULL,
	parent_id  TEXT REFERENCES tokens(id),
	hash       TEXT NOT NULL,
	issued_at  INTEGER,
	expires_at INTEGER,
	max_uses   INTEGER NOT NULL,
	uses       INTEGER NOT NULL,
	revoked    INTEGER NOT NULL,
	revoked_at INTEGER,
	audit_tag  TEXT NOT NULL,
	body       BLOB NOT NULL
) STRICT;
CREATE INDEX tokens_parent ON tokens(parent_id);
CREATE INDEX tokens_issued ON tokens(issued_at, id);

CREATE TABLE consents (
	id          TEXT PRIMARY KEY,
	client_id   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	payload     BLOB NOT NULL,
	state       TEXT NOT NULL,
	created     INTEGER,
	expires     INTEGER,
	answered    INTEGER,
	answered_by TEXT NOT NULL,
	wording     TEXT NOT NULL
) STRICT;
CREATE INDEX consents_created ON consents(created, id);
CREATE INDEX consents_pending ON consents(expires) WHERE state = 'pending';

CREATE TABLE mandates (
	permission TEXT PRIMARY KEY,
	autonomy   TEXT NOT NULL,
	agreed_id  TEXT NOT NULL,
	wording    TEXT NOT NULL,
	agreed_at  INTEGER,
	updated    INTEGER
) STRICT;

CREATE TABLE app_state (
	app_id TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  BLOB NOT NULL,
	PRIMARY KEY (app_id, key)
) STRICT, WITHOUT ROWID;

CREATE TABLE audit_log (
	seq       INTEGER PRIMARY KEY,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL,
	at        INTEGER,
	body      BLOB NOT NULL
) STRICT;

CREATE TABLE audit_checkpoints (
	seq  INTEGER PRIMARY KEY,
	head TEXT NOT NULL,
	at   INTEGER,
	body BLOB NOT NULL
) STRICT;
`},
	{Version: 2, Name: "revision counter for caches", SQL: `
CREATE TABLE revision (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	rev INTEGER NOT NULL
) STRICT;
INSERT INTO revision (id, rev) VALUES (1, 0);
CREATE TRIGGER revision_token_revoked AFTER UPDATE OF revoked ON tokens WHEN NEW.revoked <> OLD.revoked
	BEGIN UPDATE revision SET rev = rev + 1 WHERE id = 1; END;
` + revisionTriggers("mandate", "mandates", "client", "clients", "app", "apps")},
	{Version: 3, Name: "clients that require a token for every call", SQL: `
ALTER TABLE clients ADD COLUMN require_token INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tokens_client ON tokens(client_id);
`},
	{Version: 4, Name: "tokens held for clients by handle", SQL: `
CREATE TABLE holdings (
	handle      TEXT PRIMARY KEY,
	client_id   TEXT NOT NULL,
	token_id    TEXT NOT NULL,
	wire        TEXT NOT NULL,
	grants      TEXT NOT NULL,
	max_uses    INTEGER NOT NULL CHECK (max_uses >= 0),
	constrained INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	created     INTEGER
) STRICT;
CREATE INDEX holdings_client ON holdings(client_id, created);
`},
	{Version: 5, Name: "clients that are other assistants", SQL: `
ALTER TABLE clients ADD COLUMN assistant TEXT NOT NULL DEFAULT '';
`},
}

// revisionTriggers is step 2's triggers that raise the revision on every insert, update and
// delete of a table, for each pair of names (the row, the table) in rowTable. They are made
// in a loop so that the nine read as the one rule they are; the text of a released step must
// still never change (TestMigrationsUnchanged holds it).
func revisionTriggers(rowTable ...string) string {
	var b strings.Builder
	for i := 0; i < len(rowTable); i += 2 {
		for _, event := range []string{"INSERT", "UPDATE", "DELETE"} {
			fmt.Fprintf(&b, "CREATE TRIGGER revision_%s_%s AFTER %s ON %s\n", rowTable[i], strings.ToLower(event), event, rowTable[i+1])
			b.WriteString("\tBEGIN UPDATE revision SET rev = rev + 1 WHERE id = 1; END;\n")
		}
	}
	return b.String()
}

// migrate brings the schema up to the last known version, one step per transaction. Several
// processes opening a new file at once are safe: each step re-reads the version under the
// write lock.
func (s *Store) migrate(ctx context.Context) error {
	for {
		applied := false
		// Opening a file whose schema is current changes nothing: only a step moves the
		// change counter.
		err := s.writeQuiet(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER PRIMARY KEY,
				applied_at INTEGER NOT NULL
			) STRICT`); err != nil {
				return err
			}
			var v int
			if err := tx.QueryRowContext(ctx,
				`SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
				return err
			}
			m, ok, err := store.NextMigration(migrations, v)
			if !ok || err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				m.Version, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			applied = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("sqlite: schema: %w", err)
		}
		if !applied {
			return nil
		}
		s.changes.add()
	}
}
