package policy

import (
	"time"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// Call is what the broker knows about one call when it asks Decide. Every bool is a fact that
// lets the call go further, so the zero Call, and any Call that leaves a fact out, is denied.
type Call struct {
	// NoTrace leaves Decision.Trace empty: the call path needs the outcome, code and
	// explanation, and only explain shows each step's finding.
	NoTrace bool

	// Step 1: does the call name something that may run?

	// AppFound: the app named by the call is installed.
	AppFound bool
	// CapabilityFound: the app declares the capability.
	CapabilityFound bool
	// Enabled: the capability is not disabled by the operator or the person.
	Enabled bool
	// Pinned: for a tool server's tool, its name, description and schemas still hash to the
	// pin; always true for an app's capability.
	Pinned bool
	// Working: the capability passed its last evaluation and its provider is up.
	Working bool

	// CapabilityID is the capability called, parsed where it was indexed
	// (registry.Capability.ID); the explanation names it. A zero CapabilityID is named by a
	// placeholder.
	CapabilityID manifest.CapabilityID
	// Permission is the permission a token must grant for the call
	// (registry.Capability.Permission); a zero Permission is the capability's id, the
	// manifest default. A zero Permission with a zero CapabilityID is covered by no grant.
	Permission manifest.Permission
	// Capability is the capability called. Decide reads its enumerated fields and flags, and
	// not its ID and Permission text (CapabilityID and Permission say those, parsed once). It
	// fills in the manifest defaults of the fields it reads when they are empty (side effects
	// system, auth level user, risk derived from side effects, autonomy ceiling act,
	// reversibility irreversible unless an undo window makes it reversible), so a view with
	// defaults already applied and one without decide alike. An enumerated value Decide does
	// not know is read as its most cautious meaning. Nil reads as a capability that declares
	// none of them.
	Capability *manifest.Capability
	// Tier is 1 for a capability from a manifest whose signature verified against the app's
	// trusted key, 2 for anything else. Any value other than 1 is read as 2.
	Tier int

	// Step 2 and 5: the token, if the call carries one.
	Token TokenFacts

	// Step 3: ParamsProblems are the field paths at which the params break the capability's
	// schema, one per problem; empty when they validate. Only field paths: the explanation
	// repeats them.
	ParamsProblems []string

	// Step 4: ClientTrust is the trust level of the calling client. A client is never system
	// (only capgate itself is): system is read as privileged, and an empty or unknown level as
	// public.
	ClientTrust manifest.AuthLevel
	// Assistant says whether the client is another assistant, and which kind: the data
	// classes such a client may not reach are refused here too (AssistantRefusal). An
	// unknown kind is read as AssistantKeeps, the stricter.
	Assistant Assistant
	// ClientNeverAsk: the client is set never to raise consent requests; a call that would
	// ask is refused instead.
	ClientNeverAsk bool
	// ClientRequiresToken: the client, or the host for every client, requires a token for
	// every call, so that a low-risk read runs without one only when it is public (as it did
	// before low-risk reads needed none): see RunsWithoutToken.
	ClientRequiresToken bool

	// Step 5: AlsoNeeds are permissions the call needs besides the capability's own, which a
	// token must cover as well (the python app's execute_file reads a file: fs.read).
	AlsoNeeds []manifest.Permission

	// Step 5: the result of the token's constraints (token.Constraints.Check) on these
	// params. Read only when a token is present; false (the zero value) refuses, so the broker
	// must run Check, or set ConstraintOK itself for a token without constraints.
	ConstraintOK bool
	// ConstraintRule is the rule Check reported. It is named in the explanation when it is
	// one of the token package's rules; any other text is not repeated.
	ConstraintRule string

	// Step 6: Mandate is the person's standing choice for this permission, nil when there is
	// none.
	Mandate *Mandate

	// Step 7: the answer to a consent request for this very call, if one was made.

	// ConsentGranted: the person approved this call; a call that would ask is allowed.
	ConsentGranted bool
	// ConsentDenied: the person refused this call; a call that would ask is refused with
	// CONSENT_DENIED. It wins over ConsentGranted.
	ConsentDenied bool

	// Step 8: DelayedCommitDefault is how long an allowed irreversible call waits; zero or
	// negative means it does not wait.
	DelayedCommitDefault time.Duration
}

// TokenFacts is what the broker found about the call's token. Use counts and revocation come
// from the store; the signature, binding and times from package token.
type TokenFacts struct {
	// Present: the call carries a token. When false every other field is ignored.
	Present bool
	// Valid: the token parsed, its signature is capgate's, and it is bound to this client.
	Valid bool
	// InvalidReason says why a token is not valid. The explanation repeats it only when it is
	// the text of one of package token's errors (token.ErrBadSignature and its kind); any
	// other text, which might quote the token, is replaced.
	InvalidReason string
	// Revoked, Expired, Exhausted: the store holds a revocation; the time of the call is at
	// or after expires_at (or before issued_at); no use is left.
	Revoked, Expired, Exhausted bool
	// Grants are the token's capabilities: permissions and patterns ending in ".*".
	Grants []string
	// Constraints are the token's constraints. Decide does not evaluate them (the broker runs
	// Check, see Call.ConstraintOK); the trace says whether there were any.
	Constraints token.Constraints
	// ConsentRecorded: the token was issued with the person's recorded consent (it has a
	// consent_id the store knows as approved).
	ConsentRecorded bool
}

// Mandate is the person's standing autonomy for a permission. It can only narrow what a
// capability's ceiling allows.
type Mandate struct {
	// Autonomy is the person's choice; empty means the mandate sets none, and an unknown
	// value is read as handoff.
	Autonomy manifest.Autonomy
	// AgreedID, Wording and AgreedAt record the earlier go-ahead that act_if_agreed needs:
	// which request, which wording, when. All three must be set for it to count.
	AgreedID string
	Wording  string
	AgreedAt time.Time
}
