package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

// migrations is the schema, step by step (store.Migration). A replica running older code
// refuses a schema newer than it knows, so a rolling upgrade adds steps that the old code can
// run beside (new tables, new columns with defaults) and removes things only in a later
// release.
//
// Names are unqualified: each step runs with search_path pinned to the one schema the
// connection's search_path selected (migrateStep), so that tables, triggers and functions are
// made there, and functions capture that search_path (SET search_path FROM CURRENT) so that
// they find their tables whatever the caller's search_path. Text keys are COLLATE "C", so that
// lists come out in byte order. Times are bigint Unix nanoseconds, NULL for the zero time.
var migrations = []store.Migration{
	{Version: 1, Name: "initial schema", SQL: `
CREATE TABLE apps (
	app_id   text COLLATE "C" PRIMARY KEY,
	alias    text COLLATE "C" NOT NULL,
	tier     integer NOT NULL,
	reason   text NOT NULL,
	manifest bytea NOT NULL,
	enabled  boolean NOT NULL,
	updated  bigint
);
CREATE UNIQUE INDEX apps_alias ON apps (alias) WHERE alias <> '';

CREATE TABLE clients (
	id        text COLLATE "C" PRIMARY KEY,
	name      text COLLATE "C" NOT NULL UNIQUE,
	key_hash  text COLLATE "C" NOT NULL,
	trust     text NOT NULL,
	never_ask boolean NOT NULL,
	unix_uid  bigint UNIQUE,
	created   bigint,
	disabled  boolean NOT NULL
);
CREATE UNIQUE INDEX clients_key_hash ON clients (key_hash) WHERE key_hash <> '';

-- Every call updates a token's uses: room left in each page (fillfactor) lets PostgreSQL
-- write the new row version beside the old one without touching the indexes (a HOT update).
CREATE TABLE tokens (
	id         text COLLATE "C" PRIMARY KEY,
	client_id  text COLLATE "C" NOT NULL,
	parent_id  text COLLATE "C" REFERENCES tokens (id),
	hash       text NOT NULL,
	issued_at  bigint,
	expires_at bigint,
	max_uses   bigint NOT NULL CHECK (max_uses >= 0),
	uses       bigint NOT NULL CHECK (uses >= 0),
	revoked    boolean NOT NULL,
	revoked_at bigint,
	audit_tag  text NOT NULL,
	body       bytea NOT NULL
) WITH (fillfactor = 80);
CREATE INDEX tokens_parent ON tokens (parent_id);
CREATE INDEX tokens_issued ON tokens (issued_at NULLS FIRST, id);

CREATE TABLE consents (
	id          text COLLATE "C" PRIMARY KEY,
	client_id   text COLLATE "C" NOT NULL,
	kind        text NOT NULL,
	payload     bytea NOT NULL,
	state       text NOT NULL,
	created     bigint,
	expires     bigint,
	answered    bigint,
	answered_by text NOT NULL,
	wording     text NOT NULL
);
CREATE INDEX consents_created ON consents (created NULLS FIRST, id);
CREATE INDEX consents_pending ON consents (expires) WHERE state = 'pending';

CREATE TABLE mandates (
	permission text COLLATE "C" PRIMARY KEY,
	autonomy   text NOT NULL,
	agreed_id  text NOT NULL,
	wording    text NOT NULL,
	agreed_at  bigint,
	updated    bigint
);

CREATE TABLE app_state (
	app_id text COLLATE "C" NOT NULL,
	key    text COLLATE "C" NOT NULL,
	value  bytea NOT NULL,
	PRIMARY KEY (app_id, key)
);

CREATE TABLE audit_log (
	seq       bigint PRIMARY KEY CHECK (seq > 0),
	prev_hash text NOT NULL,
	hash      text NOT NULL,
	at        bigint,
	body      bytea NOT NULL
);

CREATE TABLE audit_checkpoints (
	seq  bigint PRIMARY KEY,
	head text NOT NULL,
	at   bigint,
	body bytea NOT NULL
);
`},
	{Version: 2, Name: "revision counter and notifications", SQL: `
CREATE TABLE revision (
	id  integer PRIMARY KEY CHECK (id = 1),
	rev bigint NOT NULL
);
INSERT INTO revision (id, rev) VALUES (1, 0);

-- capgate_channel is the LISTEN/NOTIFY channel of the capgate schema named: one per schema,
-- so that stores in different schemas of one database do not hear one another, and a digest,
-- so that any schema name makes a channel name within PostgreSQL's 63 bytes.
CREATE FUNCTION capgate_channel(schema_name text) RETURNS text
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT 'capgate_' || md5(schema_name) $$;

-- capgate_revision_bump raises the revision and tells the schema's listeners.
CREATE FUNCTION capgate_revision_bump() RETURNS trigger
	LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	UPDATE revision SET rev = rev + 1 WHERE id = 1;
	PERFORM pg_notify(capgate_channel(TG_TABLE_SCHEMA), 'revision');
	RETURN NULL;
END $$;

CREATE TRIGGER revision_token_revoked AFTER UPDATE OF revoked ON tokens
	FOR EACH ROW WHEN (NEW.revoked <> OLD.revoked) EXECUTE FUNCTION capgate_revision_bump();
CREATE TRIGGER revision_mandates AFTER INSERT OR UPDATE OR DELETE ON mandates
	FOR EACH ROW EXECUTE FUNCTION capgate_revision_bump();
CREATE TRIGGER revision_clients AFTER INSERT OR UPDATE OR DELETE ON clients
	FOR EACH ROW EXECUTE FUNCTION capgate_revision_bump();
CREATE TRIGGER revision_apps AFTER INSERT OR UPDATE OR DELETE ON apps
	FOR EACH ROW EXECUTE FUNCTION capgate_revision_bump();

-- capgate_consent_notify tells the schema's listeners that a consent request was put or
-- changed state (answered, cancelled, expired). A transaction's identical notifications reach
-- a listener once.
CREATE FUNCTION capgate_consent_notify() RETURNS trigger
	LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	PERFORM pg_notify(capgate_channel(TG_TABLE_SCHEMA), 'consent');
	RETURN NULL;
END $$;

CREATE TRIGGER consent_put AFTER INSERT ON consents
	FOR EACH ROW EXECUTE FUNCTION capgate_consent_notify();
CREATE TRIGGER consent_state AFTER UPDATE OF state ON consents
	FOR EACH ROW WHEN (NEW.state IS DISTINCT FROM OLD.state) EXECUTE FUNCTION capgate_consent_notify();
`},
	{Version: 3, Name: "token functions", SQL: `
-- capgate_take_use takes one use of the token p_id and of each of its ancestors at p_now, in
-- one call. It locks the chain's rows root first, the order every caller uses, so that two
-- uses of tokens sharing an ancestor queue on it instead of deadlocking, then checks the
-- whole chain (revoked first, then expired, then exhausted) and counts the use against each
-- link. outcome is 'ok' (taken is then the token's uses including this one), 'not_found',
-- 'revoked', 'expired', 'exhausted' or 'too_deep' (more than p_max_depth links).
--
-- A token's parent_id never changes once written, so the chain can be read before it is
-- locked; the locked rows are read afresh (READ COMMITTED re-reads a row it had to wait for).
` + takeUseFunction("CREATE FUNCTION", false) + `

-- capgate_revoke revokes the token p_id and every token derived from it, transitively, at
-- p_at; tokens already revoked keep their first revocation time. It returns false if there is
-- no such token. It locks the token first and its descendants in order of depth, the order
-- capgate_take_use locks a chain in. A token derived while this runs is caught by the next
-- pass: the loop ends when a pass finds nothing left to revoke. (PutToken reads the parent
-- FOR SHARE, so a child put after the parent's revocation commits is itself put revoked.)
CREATE FUNCTION capgate_revoke(p_id text, p_at bigint, p_max_depth integer) RETURNS boolean
	LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	ids text[];
	n   bigint;
BEGIN
	PERFORM 1 FROM tokens k WHERE k.id = p_id FOR UPDATE;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	LOOP
		WITH RECURSIVE down (id, depth) AS (
			SELECT p_id COLLATE "C", 0
			UNION ALL
			SELECT k.id, down.depth + 1 FROM tokens k JOIN down ON k.parent_id = down.id
			WHERE down.depth < p_max_depth
		)
		SELECT array_agg(down.id ORDER BY down.depth, down.id) INTO ids FROM down;
		PERFORM 1 FROM tokens k WHERE k.id = ANY (ids) AND NOT k.revoked
			ORDER BY array_position(ids, k.id) FOR UPDATE;
		UPDATE tokens k SET revoked = true, revoked_at = p_at WHERE k.id = ANY (ids) AND NOT k.revoked;
		GET DIAGNOSTICS n = ROW_COUNT;
		EXIT WHEN n = 0;
	END LOOP;
	RETURN true;
END $$;
`},
	{Version: 4, Name: "clients that require a token, and a token refused while its client is disabled", SQL: `
ALTER TABLE clients ADD COLUMN require_token boolean NOT NULL DEFAULT false;
CREATE INDEX tokens_client ON tokens (client_id);

-- capgate_take_use is step 3's function with one more check: a token whose client is disabled
-- is refused ('client_disabled', after 'revoked' and before 'expired') and takes no use. A
-- token whose client row is gone is not refused for that: removing a client revokes its
-- tokens in the same transaction. A replica of the release before this one reads the new
-- outcome as an unknown one and refuses the call: it fails closed.
` + takeUseFunction("CREATE OR REPLACE FUNCTION", true) + `
`},
	{Version: 5, Name: "tokens held for clients by handle", SQL: `
CREATE TABLE holdings (
	handle      text COLLATE "C" PRIMARY KEY,
	client_id   text COLLATE "C" NOT NULL,
	token_id    text COLLATE "C" NOT NULL,
	wire        text NOT NULL,
	grants      text NOT NULL,
	max_uses    bigint NOT NULL CHECK (max_uses >= 0),
	constrained boolean NOT NULL,
	expires_at  bigint NOT NULL,
	created     bigint
);
CREATE INDEX holdings_client ON holdings (client_id, created);
`},
	{Version: 6, Name: "clients that are other assistants", SQL: `
ALTER TABLE clients ADD COLUMN assistant text NOT NULL DEFAULT '';
`},
}

// takeUseFunction is the statement that makes capgate_take_use, as steps 3 and 4 have it:
// create is its verb, and clientCheck adds step 4's refusal of a token whose client is
// disabled. It is built, not written out twice, so that the one check step 4 adds is the
// only difference to read; the text of a released step must still never change
// (TestMigrationsUnchanged holds it).
func takeUseFunction(create string, clientCheck bool) string {
	decl, check, outcome := "", "", ""
	if clientCheck {
		decl = "\tclient_off   boolean := false;\n"
		check = "\tSELECT coalesce(c.disabled, false) INTO client_off\n" +
			"\t\tFROM tokens k LEFT JOIN clients c ON c.id = k.client_id WHERE k.id = p_id;\n"
		outcome = "\tELSIF client_off THEN\n\t\toutcome := 'client_disabled';\n"
	}
	return create + ` capgate_take_use(p_id text, p_now bigint, p_max_depth integer,
	OUT outcome text, OUT taken bigint)
	LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	chain      text[];
	top_parent text;
	link       record;
	n_locked   integer := 0;
	is_revoked   boolean := false;
	is_expired   boolean := false;
	is_exhausted boolean := false;
` + decl + `BEGIN
	WITH RECURSIVE up (id, parent_id, depth) AS (
		SELECT k.id, k.parent_id, 1 FROM tokens k WHERE k.id = p_id
		UNION ALL
		SELECT k.id, k.parent_id, up.depth + 1 FROM tokens k JOIN up ON k.id = up.parent_id
		WHERE up.depth < p_max_depth
	)
	SELECT array_agg(up.id ORDER BY up.depth DESC),
	       (array_agg(up.parent_id ORDER BY up.depth DESC))[1]
	INTO chain, top_parent FROM up;
	IF chain IS NULL THEN
		outcome := 'not_found';
		RETURN;
	END IF;
	IF top_parent IS NOT NULL THEN
		outcome := 'too_deep';
		RETURN;
	END IF;

	FOR link IN
		SELECT k.id, k.revoked, k.expires_at, k.max_uses, k.uses FROM tokens k
		WHERE k.id = ANY (chain) ORDER BY array_position(chain, k.id) FOR UPDATE
	LOOP
		n_locked := n_locked + 1;
		is_revoked := is_revoked OR link.revoked;
		is_expired := is_expired OR (link.expires_at IS NOT NULL AND p_now >= link.expires_at);
		is_exhausted := is_exhausted OR (link.max_uses > 0 AND link.uses >= link.max_uses);
		IF link.id = p_id THEN
			taken := link.uses + 1;
		END IF;
	END LOOP;
	IF n_locked <> cardinality(chain) THEN
		RAISE EXCEPTION 'capgate_take_use: token chain changed while locked';
	END IF;
` + check + `	IF is_revoked THEN
		outcome := 'revoked';
` + outcome + `	ELSIF is_expired THEN
		outcome := 'expired';
	ELSIF is_exhausted THEN
		outcome := 'exhausted';
	ELSE
		UPDATE tokens k SET uses = k.uses + 1 WHERE k.id = ANY (chain);
		outcome := 'ok';
		RETURN;
	END IF;
	taken := NULL;
END $$;`
}

// migrationLockKey names the advisory lock that serialises migrations of one schema; the
// schema's name is hashed into the lock's key, so that schemas migrate independently.
const migrationLockKey = "capgate schema migration "

// migrate brings the schema up to the last known version, one step per transaction. Several
// processes opening one database at once are safe: each step takes a transaction-scoped
// advisory lock before it reads the version, so the first applies the step and the others,
// waiting on the lock, find it applied.
func (s *Store) migrate(ctx context.Context) error {
	for {
		applied, err := s.migrateStep(ctx)
		if err != nil {
			return fmt.Errorf("postgres: schema: %w", err)
		}
		if !applied {
			return nil
		}
	}
}

// migrateStep applies the next step, if any, in one transaction, and reports whether it did.
func (s *Store) migrateStep(ctx context.Context) (applied bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var schema pgtype.Text
	var version int
	if err := tx.QueryRow(ctx, `SELECT current_schema(), current_setting('server_version_num')::integer`).
		Scan(&schema, &version); err != nil {
		return false, err
	}
	if version < minServerVersion {
		return false, fmt.Errorf("PostgreSQL %d is too old: capgate needs %d or later", version/10000, minServerVersion/10000)
	}
	if !schema.Valid {
		return false, errors.New("the connection's search_path names no schema that exists: create the schema, or set search_path to one that exists")
	}
	// Everything this transaction makes goes in that one schema, and functions made here
	// capture it as their search_path.
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', quote_ident($1), true),
			pg_advisory_xact_lock(hashtextextended($2 || $1, 0))`,
		schema.String, migrationLockKey); err != nil {
		return false, fmt.Errorf("lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at bigint NOT NULL
		)`); err != nil {
		return false, err
	}
	var v int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return false, err
	}
	m, ok, err := store.NextMigration(migrations, v)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("%s: %w", m, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.Version, m.Name, time.Now().UnixNano()); err != nil {
		return false, fmt.Errorf("%s: %w", m, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("%s: commit: %w", m, err)
	}
	return true, nil
}
