// Package store is everything the gateway keeps, behind one interface: the registry of apps,
// clients, tokens with their use counts and revocations, consent requests, mandates, app state,
// and the audit log with its checkpoints. SQLite (store/sqlite, the default) and PostgreSQL
// implement it, and both pass the same conformance suite (store/storetest), so that several
// gateway replicas on one PostgreSQL behave as one. What the backends share that is not SQL
// lives here too, so that each backend is only its SQL and its driver's glue: the checks of
// every argument and the rules of the state machines (a file per record: token.go, consent.go,
// ...), times as columns (time.go), records as rows and back (column.go and those files), and
// errors that wrap the sentinels below (errors.go).
//
// Contract for every implementation:
//   - all methods are safe for concurrent use, by goroutines and by other processes sharing
//     the same database;
//   - a write that returned nil is durable (it survives a crash of the process or the machine);
//   - a missing record is ErrNotFound (wrapped), never a zero value and nil;
//   - the compare-and-set methods (TakeUse, AnswerConsent, AppendAudit) are atomic across
//     processes: two callers never both succeed where only one may;
//   - times keep at least millisecond precision and the zero time comes back as the zero
//     time; byte fields keep their content (nil and empty need not be told apart);
//   - lists are ordered by the byte order of the key named (PostgreSQL: COLLATE "C").
package store

import (
	"context"
	"errors"
	"time"

	"github.com/capgate/capgate/manifest"
)

// Errors callers test with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrExhausted = errors.New("token has no uses left")
	ErrRevoked   = errors.New("token is revoked")
	ErrExpired   = errors.New("token has expired")
	ErrConflict  = errors.New("conflict: the record changed since it was read")
	// ErrClientDisabled is a token refused at use because the client it is bound to is
	// disabled: the token is neither revoked nor used, and works again once the client is
	// enabled.
	ErrClientDisabled = errors.New("the token's client is disabled")
)

// Store is everything the gateway keeps.
type Store interface {
	Apps
	Clients
	Tokens
	Consents
	Mandates
	State
	Audit
	Holdings
	// Revision returns a counter that grows whenever a token is revoked or a mandate, a
	// client or an app is put, changed or deleted, by any process sharing the store. Caches
	// of those records compare it to know when to drop what they hold; it says nothing about
	// use counts, consents, state or audit records, which callers read fresh.
	Revision(ctx context.Context) (int64, error)
	// Close releases the store. Using it afterwards is an error.
	Close() error
}

// ChangeCounter is implemented by a store whose processes all share, in memory, a counter
// of the committed changes a cached decision may depend on: a token revoked, a client, a
// mandate or an app changed, a consent answered, a token issued, a token held for an MCP
// client or dropped; never an audit record, an app's own state or a use taken (the SQLite
// store, whose processes share one machine).
// Changes returns it, and false when it is not available. A caller that read it before
// reading the store, and reads the same value later, knows that no such change committed in
// between: what it read then still holds.
type ChangeCounter interface {
	Changes() (uint64, bool)
}

// AuditSequencer is implemented by a store whose audit log several processes append to at
// once (PostgreSQL replicas). Rather than race for the head and rebuild the batch on every
// ErrConflict, which under steady load from several replicas is most batches, a writer takes
// its turn: the store locks the log against every other sequenced writer, reads the head, asks
// build for the entries that follow it, and appends them, all in one transaction.
type AuditSequencer interface {
	// AppendAuditSequenced locks the log, calls build with its head (the zero AuditEntry for
	// an empty log) and appends what build returns, all or none, under AppendAudit's rules;
	// ErrConflict still means a writer that does not take the lock appended first. build is
	// called once per call, while the lock is held: it must be quick and must not block.
	AppendAuditSequenced(ctx context.Context, build func(head AuditEntry) ([]AuditEntry, error)) error
}

// Watcher is implemented by a store that can tell of changes committed by other processes as
// they happen (PostgreSQL: LISTEN/NOTIFY). A cache that compares Revision, or a call waiting
// for a consent answer, uses it to act at once instead of at its next poll. Callers keep
// polling all the same: a notification is lost while a connection is down.
type Watcher interface {
	// Watch calls fn with the topic of each change (TopicRevision, TopicConsent) committed by
	// any process sharing the store, this one included, until ctx ends; then it returns
	// ctx's error. It reconnects by itself after a lost connection and then calls fn with
	// every topic once, since changes may have been missed. fn must not block.
	Watch(ctx context.Context, fn func(topic string)) error
}

// Topics of a Watcher.
const (
	TopicRevision = "revision" // Revision moved
	TopicConsent  = "consent"  // a consent request was put, answered or expired
)

// App is a registered app: its manifest as received and how far it is trusted.
type App struct {
	AppID    string    // reverse-DNS id
	Alias    string    // short name for the IPC "app" field, unique when not empty
	Tier     int       // 1 or 2
	Reason   string    // why this tier (manifest.Reason)
	Manifest []byte    // the manifest's canonical JSON, signature included
	Enabled  bool      //
	Updated  time.Time //
}

// Apps is the registry.
type Apps interface {
	// PutApp inserts or replaces an app by AppID. An alias taken by another app is ErrExists.
	PutApp(ctx context.Context, a App) error
	GetApp(ctx context.Context, appID string) (App, error)
	// AppByAlias finds an app by its alias.
	AppByAlias(ctx context.Context, alias string) (App, error)
	ListApps(ctx context.Context) ([]App, error)                         // ordered by AppID
	SetAppEnabled(ctx context.Context, appID string, enabled bool) error // missing: ErrNotFound
	DeleteApp(ctx context.Context, appID string) error                   // missing: ErrNotFound
}

// Client is an agent that may call the gateway.
type Client struct {
	ID       string             // stable id, e.g. "cl_..."
	Name     string             // unique
	KeyHash  string             // sha256 of the client key ("sha256:<hex>"); the key itself is never stored
	Trust    manifest.AuthLevel // public, user, privileged (system is capgate itself)
	NeverAsk bool               // calls that would need consent are denied instead
	UnixUID  *int               // when set, a unix-socket peer with this uid is this client
	Created  time.Time          //
	Disabled bool               // its key and uid are refused, and so are its tokens at use
	// RequireToken: every call of this client needs a token (or the person's consent for
	// the call), even a low-risk read that another client may make without one.
	RequireToken bool
	// Assistant is "" for an agent of the person's, or what kind of other assistant the
	// client is (policy.Assistant: "keeps" when its provider stores or trains on what it is
	// given, "private" when it does neither): such a client never reaches what the
	// definitions document keeps from other assistants.
	Assistant string
}

// Clients are the agents.
type Clients interface {
	// PutClient inserts a client; a taken ID, Name, KeyHash (when not empty) or UnixUID (when
	// set) is ErrExists: each of them identifies exactly one client.
	PutClient(ctx context.Context, c Client) error
	// UpdateClient replaces every field of the client with c.ID: ErrNotFound if there is
	// none, ErrExists if the new Name, KeyHash or UnixUID is another client's.
	UpdateClient(ctx context.Context, c Client) error
	// SetClientDisabled disables or enables the client with the id, in one write; a missing
	// client is ErrNotFound. Setting what is already set is no error (and still moves the
	// revision).
	SetClientDisabled(ctx context.Context, id string, disabled bool) error
	// DeleteClient removes the client with the id and revokes, at at, every token bound to
	// it and every token derived from those (as Revoke does), all in one transaction: a
	// missing client is ErrNotFound and changes nothing.
	DeleteClient(ctx context.Context, id string, at time.Time) error
	GetClient(ctx context.Context, id string) (Client, error)
	ClientByKeyHash(ctx context.Context, keyHash string) (Client, error)
	ClientByName(ctx context.Context, name string) (Client, error)
	ClientByUID(ctx context.Context, uid int) (Client, error)
	ListClients(ctx context.Context) ([]Client, error) // ordered by Name
}

// Token is the state of an issued capability token. The signed token itself is held by the
// agent; the store keeps what must be shared and atomic: uses and revocation.
type Token struct {
	ID        string    // token_id
	ClientID  string    // the client it is bound to
	ParentID  string    // the token it was derived from, "" for a root token
	Hash      string    // sha256 of the wire form
	IssuedAt  time.Time //
	ExpiresAt time.Time //
	MaxUses   int64     // 0 means unlimited
	Uses      int64     // successful uses taken so far
	Revoked   bool      // set by Revoke on it or on any ancestor
	RevokedAt time.Time //
	AuditTag  string    //
	Body      []byte    // the token's canonical JSON, for listing
}

// Tokens hold use counts and revocations.
type Tokens interface {
	// PutToken records a newly issued token. A taken ID is ErrExists; a ParentID that does not
	// exist is ErrNotFound.
	PutToken(ctx context.Context, t Token) error
	GetToken(ctx context.Context, id string) (Token, error)
	// CheckToken reports whether the token itself can be used at time now, without taking a
	// use: ErrNotFound, ErrRevoked (Revoke marks every descendant too), ErrClientDisabled if
	// the client it is bound to is disabled, or ErrExpired if now is at or after its own
	// expiry. Neither uses nor ancestors' expiries are looked at, so it
	// is the check at use of a root token with no use limit (every other token goes through
	// TakeUse); it runs on every such call, so it is one small read.
	CheckToken(ctx context.Context, id string, now time.Time) error
	// TakeUse atomically takes one use of the token at time now and returns the uses taken so
	// far including this one: ErrRevoked if it or an ancestor is revoked, ErrClientDisabled if
	// the client it is bound to is disabled (a token whose client is gone is not refused for
	// that: DeleteClient revokes the tokens of the client it removes), ErrExpired if now is
	// at or after its expiry (or an ancestor's), ErrExhausted if MaxUses uses are taken (or an
	// ancestor has none left: a derived token's use also counts against each ancestor).
	TakeUse(ctx context.Context, id string, now time.Time) (int64, error)
	// Revoke revokes the token and every token derived from it, transitively. Revoking a
	// revoked token is not an error.
	Revoke(ctx context.Context, id string, at time.Time) error
	// ListTokens lists tokens, the live ones (not revoked, not expired at now, not exhausted,
	// and the same for every ancestor: those TakeUse would accept at now) when live is set;
	// ordered by IssuedAt.
	ListTokens(ctx context.Context, live bool, now time.Time) ([]Token, error)
}

// Consent states.
const (
	ConsentPending   = "pending"
	ConsentApproved  = "approved"
	ConsentDenied    = "denied"
	ConsentExpired   = "expired"
	ConsentCancelled = "cancelled"
)

// Consent is a question to the person.
type Consent struct {
	ID         string    //
	ClientID   string    // who asks
	Kind       string    // "token" (issuing a token), "call" (one call), "commit" (a delayed commit)
	Payload    []byte    // JSON: what the person needs to decide, shown safely
	State      string    // one of the Consent* states
	Created    time.Time //
	Expires    time.Time // unanswered at Expires means denied (ConsentExpired)
	Answered   time.Time //
	AnsweredBy string    //
	Wording    string    // for act_if_agreed: the wording the person agreed to
}

// Consents are the questions to the person.
type Consents interface {
	PutConsent(ctx context.Context, c Consent) error // a taken ID is ErrExists
	GetConsent(ctx context.Context, id string) (Consent, error)
	// AnswerConsent moves a pending request to state, atomically: ErrConflict if it is no
	// longer pending (answered, cancelled or expired elsewhere), or if at is at or after its
	// Expires (it is expired, though ExpireConsents has not marked it yet).
	AnswerConsent(ctx context.Context, id, state, by, wording string, at time.Time) error
	// ExpireConsents marks every pending request with Expires at or before now as expired and
	// returns their ids, ordered by Created.
	ExpireConsents(ctx context.Context, now time.Time) ([]string, error)
	ListConsents(ctx context.Context, state string) ([]Consent, error) // "" lists all; ordered by Created
}

// Mandate is the person's standing choice of autonomy for a permission.
type Mandate struct {
	Permission string    // a permission or a grant pattern such as "fs.*"
	Autonomy   string    // act, act_if_agreed, ask, handoff
	AgreedID   string    // act_if_agreed: the consent request the agreement came from
	Wording    string    // act_if_agreed: the wording agreed to
	AgreedAt   time.Time //
	Updated    time.Time //
}

// Mandates are the person's standing choices.
type Mandates interface {
	PutMandate(ctx context.Context, m Mandate) error // insert or replace by Permission
	GetMandate(ctx context.Context, permission string) (Mandate, error)
	ListMandates(ctx context.Context) ([]Mandate, error)        // ordered by Permission
	DeleteMandate(ctx context.Context, permission string) error // missing: ErrNotFound
}

// Holding is a capability token a front keeps for its client on the gateway's side, so that
// the token never passes through the client (MCP: a model's context): the client names it by
// its Handle. A handle proves nothing on its own: the holding is bound to ClientID, and a
// front gives it only to that client, authenticated by its own key; the token in Wire is
// bound to the same client, so it is of no use to any other either.
type Holding struct {
	Handle      string    // names the holding; random, unique
	ClientID    string    // the client it is held for
	TokenID     string    // the token's id
	Wire        string    // the token's wire form
	Grants      []string  // the permissions the token grants, as issued
	MaxUses     int64     // the token's use limit, 0 for none
	Constrained bool      // the token constrains params (paths, commands, a condition)
	ExpiresAt   time.Time // the token's expiry
	Created     time.Time //
}

// Holdings are the tokens fronts keep for their clients, shared by every replica: a client
// that reaches another replica holds the same tokens there. They are not part of Revision:
// the token's own state (uses, revocation) stays in Tokens, which every use checks.
type Holdings interface {
	// PutHolding records h and, in the same transaction, removes the client's holdings that
	// expired at or before h.Created and, when more than keep (at least 1) would remain, its
	// oldest ones (by Created, then Handle) beyond keep. A taken Handle is ErrExists.
	PutHolding(ctx context.Context, h Holding, keep int) error
	// GetHolding returns the holding with the handle, whoever holds it: the caller compares
	// ClientID. A missing one is ErrNotFound.
	GetHolding(ctx context.Context, handle string) (Holding, error)
	// ListHoldings returns the client's holdings whose expiry is after now, ordered by
	// Created, then Handle.
	ListHoldings(ctx context.Context, clientID string, now time.Time) ([]Holding, error)
	// DeleteHolding removes the holding with the handle; a missing one is ErrNotFound.
	DeleteHolding(ctx context.Context, handle string) error
}

// State is per-app key-value state: settings, undo records, buffers.
type State interface {
	GetState(ctx context.Context, appID, key string) ([]byte, error) // missing: ErrNotFound
	// PutState sets a value; a nil value deletes the key (a missing key is no error), and an
	// empty non-nil value is a value.
	PutState(ctx context.Context, appID, key string, value []byte) error
	// CreateState sets a key that has no value yet, atomically across processes: ErrExists
	// when it has one, however recent (two callers racing never both succeed). value must not
	// be nil.
	CreateState(ctx context.Context, appID, key string, value []byte) error
	// ListState returns the app's keys starting with prefix, matched literally (no
	// wildcards, case-sensitive).
	ListState(ctx context.Context, appID, prefix string) (map[string][]byte, error)
}

// AuditEntry is one record of the hash-chained audit log, opaque to the store: package audit
// defines Body and computes the hashes.
type AuditEntry struct {
	Seq      int64     // 1, 2, 3, ... with no gap
	PrevHash string    // Hash of entry Seq-1, "" for Seq 1
	Hash     string    // hash of this entry
	At       time.Time //
	Body     []byte    // canonical JSON of the record
}

// Checkpoint is a signed statement of the log's length and head, opaque to the store.
type Checkpoint struct {
	Seq  int64  // the log's length when signed
	Head string // Hash of entry Seq
	At   time.Time
	Body []byte // the signed checkpoint
}

// Audit is the audit log.
type Audit interface {
	// AppendAudit appends entries atomically, all or none: the first must have Seq equal to
	// the head's Seq+1 and PrevHash equal to the head's Hash, and each next one follow the
	// one before; otherwise ErrConflict (another writer appended first), and nothing is written.
	// No entries is a no-op.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// AuditHead returns the last entry, or ErrNotFound for an empty log.
	AuditHead(ctx context.Context) (AuditEntry, error)
	// AuditRange returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq,
	// at most limit of them (0: no limit).
	AuditRange(ctx context.Context, from, to int64, limit int) ([]AuditEntry, error)
	PutCheckpoint(ctx context.Context, c Checkpoint) error // a Seq already checkpointed is ErrExists
	// Checkpoints returns every checkpoint ordered by Seq.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
}
