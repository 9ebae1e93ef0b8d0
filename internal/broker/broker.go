// Package broker is the way of one call: resolve the capability, check the token, validate the
// params, check the constraints, decide, ask the person when the decision says so, wait out a
// delayed commit, run the provider with its timeout, check its result, record every decision
// and outcome in the audit log, and answer, with an undo token when the call can be undone.
//
// Nothing runs unaudited: the decision record is durable before the provider runs, and a call
// whose record cannot be written is refused.
package broker

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// Codes the broker adds to policy's for what happens after the decision.
const (
	CodeExecutionFailed = "EXECUTION_FAILED"
	CodeTimeout         = "TIMEOUT"
)

// Options configures a Broker. Store, Registry, Tokens, Audit and Consent are required.
type Options struct {
	Store    store.Store
	Registry *registry.Registry
	Tokens   *token.Verifier
	Audit    *audit.Writer
	Consent  *consent.Service
	// TokenKey is capgate's own key: it signs the tokens it issues (Tokens verifies them with
	// its public half). Required to issue tokens.
	TokenKey ed25519.PrivateKey
	// Handlers are the in-process providers, by the text of their app id (the built-in apps'
	// ids are constants of their packages): always working.
	Handlers map[string]sdk.Handler
	// Providers, when set, finds the provider of an app Handlers does not hold, and says
	// whether it is working (the tool servers, the built-in apps that could not start).
	Providers Providers
	// DelayedCommit is how long an allowed irreversible call waits, cancellable (default 3 s;
	// negative: no wait).
	DelayedCommit time.Duration
	// DefaultTimeout bounds a capability that declares no timeout (default 30 s).
	DefaultTimeout time.Duration
	// TimeoutCeiling, when positive, caps every call's effective timeout (the host policy's
	// timeout_ceiling_ms): a capability's timeout_ms above it is cut to it.
	TimeoutCeiling time.Duration
	// ConsentWait is how long a call waits for the person's answer before returning
	// CONSENT_REQUIRED with the request's id (default 2 minutes).
	ConsentWait time.Duration
	// Now is the clock uses of tokens, consent and records are judged by (default:
	// time.Now), and decisions too when it is set (by default they read wallClock).
	Now func() time.Time
	// AlsoNeeds are permissions a capability needs besides its own, by capability id: a token
	// must cover them too. New parses them once, and refuses one that is no permission.
	AlsoNeeds map[string][]string
	// PathDir is the folder a relative path param (and the words of a command that names no
	// cwd) is resolved against when a token's allowed_paths are checked: the workspace the
	// built-in apps resolve relative paths against. "" refuses relative paths under such
	// tokens.
	PathDir string
	// Meter, when set, is told of every finished call. The gateway feeds its metrics from it.
	Meter Meter
	// RequireToken requires a token (or the person's consent) for every call of every
	// client, as Caller.RequireToken does for one: a low-risk read then runs without one
	// only when it is public (policy.RunsWithoutToken).
	RequireToken bool
}

// Broker runs calls. It is safe for concurrent use.
type Broker struct {
	o     Options
	cache *cache
	// decisionNow is the clock a decision reads a token's expiry by: Options.Now when it is
	// set, else the one-read clock (wallClock), which follows a step of the wall clock, or a
	// suspend of the machine, only within clockRebase. The use of a token is always checked
	// by Options.Now (time.Now by default), so a token that expired is never used.
	decisionNow func() time.Time
	watch       watches // tokens whose revocation handlers watch
	// alsoNeeds is Options.AlsoNeeds parsed, by capability id.
	alsoNeeds map[manifest.CapabilityID][]manifest.Permission
	// storeChecks counts the checks at use that read the store (StoreChecksAtUse).
	storeChecks atomic.Int64
	// evals are the capabilities whose last evaluation failed (SetFailedEvaluations).
	evals evalState
}

// New returns a Broker.
func New(o Options) (*Broker, error) {
	if o.Store == nil || o.Registry == nil || o.Tokens == nil || o.Audit == nil || o.Consent == nil {
		return nil, errors.New("broker: Store, Registry, Tokens, Audit and Consent are required")
	}
	if o.DelayedCommit == 0 {
		o.DelayedCommit = 3 * time.Second
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = 30 * time.Second
	}
	if o.ConsentWait <= 0 {
		o.ConsentWait = 2 * time.Minute
	}
	decisionNow := o.Now
	if o.Now == nil {
		o.Now, decisionNow = time.Now, new(wallClock).now
	}
	also, err := parseAlsoNeeds(o.AlsoNeeds)
	if err != nil {
		return nil, err
	}
	return &Broker{o: o, cache: newCache(), alsoNeeds: also, decisionNow: decisionNow}, nil
}

// parseAlsoNeeds parses Options.AlsoNeeds: the capability ids and permissions of the
// configuration become values once, here, and the call path looks them up by value.
func parseAlsoNeeds(m map[string][]string) (map[manifest.CapabilityID][]manifest.Permission, error) {
	out := make(map[manifest.CapabilityID][]manifest.Permission, len(m))
	for id, perms := range m {
		cid, err := manifest.ParseCapabilityID(id)
		if err != nil {
			return nil, fmt.Errorf("broker: AlsoNeeds: %w", err)
		}
		for _, p := range perms {
			pp, err := manifest.ParsePermission(p)
			if err != nil {
				return nil, fmt.Errorf("broker: AlsoNeeds[%s]: %w", id, err)
			}
			out[cid] = append(out[cid], pp)
		}
	}
	return out, nil
}

// Caller is the authenticated client making the call.
type Caller struct {
	ClientID string
	Name     string
	Trust    manifest.AuthLevel
	NeverAsk bool
	// RequireToken: the client requires a token for every call (store.Client.RequireToken).
	RequireToken bool
	// Assistant says whether the client is another assistant, and which kind
	// (store.Client.Assistant): what such a client may not reach is refused outright, and
	// never listed to it (policy.AssistantRefusal).
	Assistant policy.Assistant
}

// requiresToken reports whether calls of caller need a token even for a low-risk read: the
// client's setting or the host's.
func (b *Broker) requiresToken(caller Caller) bool { return caller.RequireToken || b.o.RequireToken }

// Request is one call.
type Request struct {
	RequestID string
	Action    string          // execute or query
	App       string          // alias or app id
	Method    string          // the capability's action, or its full id
	Params    json.RawMessage // canonical JSON of an object
	// ParamsValue, when a front has it, is Params already decoded as by encoding/json with
	// UseNumber (the front parsed them strictly); the broker then checks it against the
	// schema without parsing Params again. It must be the same value as Params.
	ParamsValue any
	// ParamsDecode, when a front parsed the params and ParamsValue is nil, returns them
	// decoded as ParamsValue would hold them. It is called only when the schema check runs
	// (params seen passing before are not checked again), so a front need not decode params
	// the broker will not read.
	ParamsDecode func() any
	// ParamsCanonical says Params are byte for byte their RFC 8785 form (the front wrote
	// them so): the records' params hash is taken of them as they are.
	ParamsCanonical bool
	Token           string // the capability token's wire form, "" for none
	// DryRun asks the capability to show what it would do and change nothing: only a
	// capability that declares dry_run accepts it, and an effect it reports above read fails
	// the call.
	DryRun bool
	// OnConsent, when set, is told the id of the consent request the call creates, once it
	// is pending and before the call waits for the answer, so that a front can point the
	// person to it at once (MCP's URL elicitation). It must not block.
	OnConsent func(consentID string)
	// AskOnly: a call that needs the person's consent creates the consent request and
	// returns at once, CONSENT_REQUIRED with the request pending, instead of waiting for the
	// answer; the front asks again with Consent (see resume.go).
	AskOnly bool
	// Consent names the consent request an earlier call with the same capability and params
	// made for this client: a call that needs the person's consent waits for that request's
	// answer instead of asking again. Another client's request, or another call's, is
	// INVALID_REQUEST; an approval lets one call run, once.
	Consent string
	// WithdrawOnCancel: when ctx ends while the call waits for the person, the consent request
	// is withdrawn (cancelled) rather than left pending for a later call to resume: for a
	// front whose calls are not asked again (an A2A task that was cancelled, or ran out of
	// time), so that the person is not left a question nothing waits on.
	WithdrawOnCancel bool
	// Route, for a call by definition, says how its capability was chosen ("by definition
	// NAME@MAJOR.MINOR on the PATH path"): every record of the call begins its explanation
	// with it, so that the audit log says which path ran.
	Route string
	// CallID, when set, is the call's id instead of a fresh one: a trigger's firing gives its
	// own, the same at every attempt of the firing, so that its records name the firing and a
	// capability whose idempotency is keyed can take it as its key (sdk.InvocationContext's
	// CallID). It must be "fir_" and hex (trigger.FiringID); any other is refused.
	CallID string
}

// Result is what came of a call: the decision, and for an allowed call the provider's result.
type Result struct {
	Decision     policy.Decision
	Code         string // "" on success
	Message      string // plain words, never a param value or a token
	Data         json.RawMessage
	UndoToken    string
	UndoUntil    time.Time
	Compensation string // a compensable capability's remedy
	ConsentID    string // the consent request asked, when the call waits on the person
	CallID       string
	// partial, when set, says why a successful call's outcome is recorded as PARTIAL.
	partial string
}

// ResultPartial is the audit record's result of a call that succeeded without emitting every
// evidence record its capability declares.
const ResultPartial = "PARTIAL"

// timeout is a call's effective timeout: the least of the capability's timeout_ms (else
// DefaultTimeout), the host policy's ceiling, and the time left before its token expires.
func (b *Broker) timeout(f facts) time.Duration {
	t := b.o.DefaultTimeout
	if f.cap.Cap != nil && f.cap.Cap.TimeoutMS > 0 {
		t = time.Duration(f.cap.Cap.TimeoutMS) * time.Millisecond
	}
	if b.o.TimeoutCeiling > 0 && b.o.TimeoutCeiling < t {
		t = b.o.TimeoutCeiling
	}
	if f.hasToken && f.tok.ExpiresAt > 0 {
		if left := time.Unix(f.tok.ExpiresAt, 0).Sub(b.o.Now()); left < t {
			t = max(left, time.Millisecond)
		}
	}
	return t
}

// missingEvidence are the evidence types declared that no emitted record has.
func missingEvidence(declared []string, emitted []sdk.Evidence) []string {
	var missing []string
	for _, d := range declared {
		if !slices.ContainsFunc(emitted, func(e sdk.Evidence) bool { return e.Type == d }) {
			missing = append(missing, d)
		}
	}
	return missing
}

// OK reports whether the call ran and succeeded.
func (r Result) OK() bool { return r.Code == "" && r.Decision.Allowed() }

// facts gathers what the decision needs, without side effects.
type facts struct {
	call     policy.Call
	cap      registry.Capability
	tok      token.Token
	hasToken bool
	perm     manifest.Permission // the capability's, the zero Permission when none was found
	// resolved are the path params the token's allowed_paths checked, each as the absolute,
	// link-resolved path it matched: the provider gets these in place of what the agent sent.
	resolved []token.Value
	// h is the provider of the capability's app, when it is working.
	h sdk.Handler
	// mandateErr is why the person's mandates could not be read: the call is refused
	// rather than decided without them (a mandate only narrows).
	mandateErr error
	// paramsHash, once hashed is set, is the params' audit.ParamsHash ("" when they have
	// none), made once for every record of the call.
	paramsHash string
	hashed     bool
}

// paramsHash is the audit records' hash of the call's params, "" for params that cannot
// be hashed.
func paramsHash(req Request) string {
	if req.ParamsCanonical {
		return audit.ParamsHashOfCanonical(req.Params)
	}
	ph, err := audit.ParamsHash(req.Params)
	if err != nil {
		return ""
	}
	return ph
}

// gather fills f, which is zero, with the facts of the call.
func (b *Broker) gather(ctx context.Context, caller Caller, req Request, f *facts) {
	now := b.decisionNow()
	f.call.ClientTrust = caller.Trust
	f.call.ClientNeverAsk = caller.NeverAsk
	f.call.Assistant = caller.Assistant
	f.call.ClientRequiresToken = b.requiresToken(caller)
	f.call.DelayedCommitDefault = b.o.DelayedCommit
	cap, ok := b.o.Registry.Method(req.App, req.Method)
	if ok {
		f.call.AppFound = true
		f.cap = cap
		// An app with no provider here is decided in full and answers APP_NOT_FOUND where
		// it would run; one whose provider is down is not working (step 1).
		h, state := b.provider(cap.App.ID)
		if state == Working {
			f.h = h
		}
		// A capability whose last evaluation failed is not working, as a provider that is
		// down (the evaluation gate).
		_, evalFailed := b.EvaluationFailed(cap.ID)
		f.call.CapabilityFound, f.call.Enabled, f.call.Pinned, f.call.Working = true, cap.App.Enabled, b.o.Registry.Pinned(cap.ID.String()), state != NotWorking && !evalFailed
		f.call.CapabilityID, f.call.Permission = cap.ID, cap.Permission
		f.call.Capability = cap.Cap
		f.call.Tier = int(cap.App.Tier)
		f.perm = cap.Permission
		f.call.AlsoNeeds = b.alsoNeeds[cap.ID]
	} else if app, found := b.o.Registry.App(req.App); found {
		f.call.AppFound = true
		if !app.Enabled {
			f.call.CapabilityFound = true // disabled: step 1 refuses as METHOD_NOT_FOUND
		}
	}
	if req.Token != "" {
		f.call.Token.Present = true
		// Into f.tok at once (a token is a few hundred bytes), which stays zero unless the
		// token is valid and the caller's.
		wireDigest, err := b.o.Tokens.VerifyHashed(req.Token, &f.tok)
		tok := &f.tok
		switch {
		case err != nil:
			f.call.Token.InvalidReason = errText(err)
		case tok.CheckClient(caller.ClientID) != nil:
			f.tok = token.Token{}
			f.call.Token.InvalidReason = token.ErrWrongClient.Error()
		default:
			f.call.Token.Valid = true
			f.hasToken = true
			f.call.Token.Grants = tok.Capabilities
			f.call.Token.Constraints = tok.Constraints
			f.call.Token.Expired = tok.CheckTime(now) != nil
			st, err := b.tokenState(ctx, tok.ID, tok.ConsentID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				f.call.Token.Valid, f.call.Token.InvalidReason = false, "token unknown to this gateway"
			case err != nil:
				f.call.Token.Valid, f.call.Token.InvalidReason = false, "token state unavailable"
			case !st.hashOK || !st.digest.Equal(&wireDigest):
				// Signed with capgate's key and naming an issued token's id, but not the token
				// issued under it: a key that leaked, or a store whose tokens were rewritten.
				f.call.Token.Valid, f.call.Token.InvalidReason = false, "token is not the one issued under its id"
			default:
				f.call.Token.Revoked = st.revoked
				f.call.Token.Exhausted = st.maxUses > 0 && st.uses >= st.maxUses
				if !st.expiresAt.IsZero() && !now.Before(st.expiresAt) {
					f.call.Token.Expired = true
				}
				f.call.Token.ConsentRecorded = st.consented
			}
		}
	}
	if ok {
		if cap.Params == nil {
			f.call.ParamsProblems = []string{"params"}
		} else if err := b.validateParams(cap.Params, req); err != nil {
			var ps manifest.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					f.call.ParamsProblems = append(f.call.ParamsProblems, p.Path)
				}
			} else {
				f.call.ParamsProblems = []string{"params"}
			}
		} else if v, is := f.h.(sdk.ParamValidator); is && f.call.Working && !tokenRefused(f.call.Token) {
			// The app's own rules, after the schema and never instead of it, and only for a
			// call steps 1 and 2 let through: the app sees no params of a call that its
			// token already refuses.
			f.call.ParamsProblems = appParamProblems(v, cap.ID.String(), req.Params)
		}
		if f.hasToken {
			// A token that constrains no param (the usual case) has nothing to check here,
			// so the params are decoded only for one that does.
			f.call.ConstraintOK = true
			if f.tok.Constraints.OnParams() {
				// A condition on the time is judged by the exact clock.
				v := tokenConstraints(f.tok, cap, f.perm, req.Params, b.o.PathDir, b.o.Now())
				f.call.ConstraintOK, f.call.ConstraintRule, f.resolved = v.OK, v.Rule, v.Resolved
			}
		}
		if m, err := b.mandate(ctx, f.perm); err != nil {
			f.mandateErr = err
		} else if m != nil {
			f.call.Mandate = m
		}
	}
}

// tokenRefused reports whether step 2 refuses the call's token.
func tokenRefused(t policy.TokenFacts) bool {
	return t.Present && (!t.Valid || t.Revoked || t.Expired || t.Exhausted)
}

// appParamProblems runs the app's own ParamValidator on params that passed the schema and
// returns the field paths it names: an *sdk.Error's Problems, or "params" for any other
// refusal (an error's text is the app's and is not shown). A validator that panics refuses.
func appParamProblems(v sdk.ParamValidator, capID string, params json.RawMessage) (paths []string) {
	defer func() {
		if recover() != nil {
			paths = []string{"params"}
		}
	}()
	err := v.ValidateParams(capID, params)
	if err == nil {
		return nil
	}
	var e *sdk.Error
	if errors.As(err, &e) {
		for _, p := range e.Problems {
			if len(paths) == maxAppProblems {
				break
			}
			// The app names paths inside the params, as sdk.DefaultValidateParams does; the
			// gateway's own check names them from "params".
			switch {
			case p.Path == "":
				paths = append(paths, "params")
			case strings.HasPrefix(p.Path, "["):
				paths = append(paths, "params"+p.Path)
			default:
				paths = append(paths, "params."+p.Path)
			}
		}
	}
	if len(paths) == 0 {
		paths = []string{"params"}
	}
	return paths
}

// tokenConstraints runs the token's constraints on the params. Which params are paths,
// cwds, commands and command input the capability's parameters schema says (its param
// classes, see manifest.ParamClass), wherever they sit in the params; a capability whose
// params are not all classified, or params that hold a value its schema does not classify,
// are refused by a token with path or command constraints.
func tokenConstraints(t token.Token, cap registry.Capability, perm manifest.Permission, raw json.RawMessage, dir string, now time.Time) token.Verdict {
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		// Params that passed the schema always decode; what cannot be read is not let
		// through a constraint.
		return token.Verdict{Rule: token.RuleUnclassified}
	}
	params, _ := decoded.(map[string]any)
	found := cap.Classes.Find(decoded)
	in := token.Input{
		Permission:   perm.String(),
		Params:       params,
		CommandInput: len(found.Inputs) > 0,
		Unclassified: !cap.Classes.Complete() || len(found.Unclassified) > 0 || len(found.Ambiguous) > 0,
		Dir:          dir,
		Now:          now,
	}
	for _, p := range found.Paths {
		in.Paths = append(in.Paths, token.Value{Pointer: p.Pointer, Text: p.Text})
	}
	for _, c := range found.Commands {
		cmd := token.Command{Value: token.Value{Pointer: c.Pointer, Text: c.Text}}
		if c.Cwd != nil {
			cmd.Cwd = &token.Value{Pointer: c.Cwd.Pointer, Text: c.Cwd.Text}
		}
		in.Commands = append(in.Commands, cmd)
	}
	return t.Constraints.Check(in)
}

// mandate finds the person's standing choice for permission (MandateFor) as the decision
// reads it.
func (b *Broker) mandate(ctx context.Context, permission manifest.Permission) (*policy.Mandate, error) {
	best, ok, err := b.MandateFor(ctx, permission)
	if err != nil || !ok {
		return nil, err
	}
	return &policy.Mandate{Autonomy: manifest.Autonomy(best.Autonomy), AgreedID: best.AgreedID, Wording: best.Wording, AgreedAt: best.AgreedAt}, nil
}

// MandateFor finds the person's standing choice for permission: an exact mandate, else the
// most specific pattern mandate that covers it; false when none does. Mandates are the
// store's rows, their permission a grant's text (a pattern such as "fs.*" is one), so they
// are compared as text.
func (b *Broker) MandateFor(ctx context.Context, permission manifest.Permission) (store.Mandate, bool, error) {
	ms, err := b.mandates(ctx)
	if err != nil {
		return store.Mandate{}, false, err
	}
	perm := permission.String()
	var best *store.Mandate
	for i := range ms {
		m := &ms[i]
		if m.Permission == perm || token.Covers([]string{m.Permission}, perm) {
			if best == nil || m.Permission == perm || (best.Permission != perm && len(m.Permission) > len(best.Permission)) {
				best = m
			}
		}
	}
	if best == nil {
		return store.Mandate{}, false, nil
	}
	return *best, true, nil
}

func errText(err error) string {
	for _, e := range []error{token.ErrBadSignature, token.ErrMalformed} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "token not valid"
}

// Explain returns the decision a call would get and why, with no side effect: no use is
// taken, no consent asked, nothing recorded, nothing run.
func (b *Broker) Explain(ctx context.Context, caller Caller, req Request) policy.Decision {
	var f facts
	b.gather(ctx, caller, req, &f)
	d := policy.Decide(&f.call)
	if f.mandateErr != nil && d.Outcome != policy.Deny {
		return policy.Decision{Outcome: policy.Deny, Code: CodeExecutionFailed, Explanation: errMandates}
	}
	return d
}

// Decide is Explain without the step-by-step trace: the decision the call path makes, with
// no side effect (no use taken, no consent asked, nothing recorded, nothing run). It exists
// for the benchmarks that race capgate's decision against other policy engines (the bench
// module, bench/race); a front calls Call.
func (b *Broker) Decide(ctx context.Context, caller Caller, req Request) policy.Decision {
	var f facts
	d := b.decide(ctx, caller, req, &f)
	if f.mandateErr != nil && d.Outcome != policy.Deny {
		return policy.Decision{Outcome: policy.Deny, Code: CodeExecutionFailed, Explanation: errMandates}
	}
	return d
}

// validateParams checks the params against the capability's schema: the decoded value a
// front passed, else the params' text, parsed strictly. Params that passed are remembered by
// their canonical text, per schema, so an agent repeating a call (polling a setting, paging
// a log) pays for the schema check once.
func (b *Broker) validateParams(s *manifest.Schema, req Request) error {
	if b.cache.textPassed(s, req.Params) {
		return nil
	}
	var err error
	switch {
	case req.ParamsValue != nil:
		err = s.Validate(req.ParamsValue, "params")
	case req.ParamsDecode != nil:
		err = s.Validate(req.ParamsDecode(), "params")
	default:
		err = s.ValidateJSON(req.Params, "params")
	}
	if err == nil {
		b.cache.textPass(s, req.Params)
	}
	return err
}

// validateResult checks a call's result against its capability's returns schema. Results
// that passed are remembered by their text, per schema, as params are: a read answering what
// it answered before (a setting polled, a page read again) pays for the check once.
func (b *Broker) validateResult(s *manifest.Schema, data []byte) error {
	if b.cache.textPassed(s, data) {
		return nil
	}
	if err := s.ValidateJSON(data, "result"); err != nil {
		return err
	}
	b.cache.textPass(s, data)
	return nil
}

// decide is the decision of the call path: Explain's, without the step-by-step trace. It
// fills f, which is zero, with the facts it decided on.
func (b *Broker) decide(ctx context.Context, caller Caller, req Request, f *facts) policy.Decision {
	b.gather(ctx, caller, req, f)
	f.call.NoTrace = true
	return policy.Decide(&f.call)
}

func newID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// auditRecord is the audit record of one step of a call.
func (b *Broker) auditRecord(f facts, caller Caller, req Request, callID, kind, decision, code, expl, result, consentID string, dur time.Duration) audit.Record {
	ph := f.paramsHash
	if !f.hashed {
		ph = paramsHash(req)
	}
	rec := audit.Record{
		TokenID: f.tok.ID, Action: req.Action, App: req.App, Method: req.Method, ParamsHash: ph,
		Result: result, AuditTag: f.tok.AuditTag, Decision: decision, Code: code, Explanation: clip(routed(req.Route, expl)),
		ClientID: caller.ClientID, Permission: f.perm.String(), CallID: callID, ConsentID: consentID,
		DurationMS: dur.Milliseconds(), Kind: kind,
	}
	if f.cap.Cap != nil {
		rec.Capability = f.cap.ID.String()
	}
	return rec
}

// routed is the explanation of a record of a call by definition: its route, then why.
func routed(route, expl string) string {
	if route == "" {
		return expl
	}
	return route + ": " + expl
}

// HandOff answers a call by definition that no provider can take (every path is missing or
// not working): nothing runs, the decision is recorded as a handoff (HANDOFF, with the route
// and why) and the caller is handed what was prepared, for the person to do themselves.
// req names the definition as the caller did (App, Method and Route as the front sets them);
// its Params are hashed into the record, never written.
func (b *Broker) HandOff(ctx context.Context, caller Caller, req Request, why string) Result {
	if len(req.Params) == 0 {
		req.Params = json.RawMessage("{}")
	}
	res := Result{Decision: policy.Decision{Outcome: policy.Handoff, Code: policy.CodeHandoff, Explanation: why},
		CallID: newID("call_"), Code: policy.CodeHandoff, Message: why}
	var f facts
	f.paramsHash, f.hashed = paramsHash(req), true
	rctx, cancel := recordingCtx(ctx)
	defer cancel()
	if err := b.record(rctx, f, caller, req, res.CallID, "decision", string(policy.Handoff), policy.CodeHandoff, why, "handed off", "", 0); err != nil {
		res.Message += " (and its audit record could not be written)"
	}
	if b.o.Meter != nil {
		b.o.Meter.CallDone(string(policy.Handoff), policy.CodeHandoff, 0)
	}
	return res
}

// record writes an audit record and waits until it is durable; the call is refused when it
// cannot be written.
func (b *Broker) record(ctx context.Context, f facts, caller Caller, req Request, callID, kind, decision, code, expl, result, consentID string, dur time.Duration) error {
	_, err := b.o.Audit.Append(ctx, b.auditRecord(f, caller, req, callID, kind, decision, code, expl, result, consentID, dur))
	return err
}

// readsOnly reports whether the call's capability changes nothing (side effects none or read)
// on a word capgate trusts: a Tier 1 app's signed declaration, or, for a Tier 2 capability,
// Providers.TrustedRead (an operator's classification of a tool server's tool). Its decision
// record need not be durable before it runs, only before its answer leaves. A Tier 2 app's
// own declaration is never enough: it may lie.
func (b *Broker) readsOnly(f facts) bool {
	c := f.cap.Cap
	if c == nil || f.cap.App == nil || (c.SideEffects != manifest.SideEffectNone && c.SideEffects != manifest.SideEffectRead) {
		return false
	}
	if f.cap.App.Tier == manifest.Tier1 {
		return true
	}
	return b.o.Providers != nil && b.o.Providers.TrustedRead(f.cap.App.ID, f.cap.ID)
}

// recordingCtx is the context a refusal or an outcome is recorded on: ctx, or, once ctx has
// ended (the caller went away, its deadline passed), one of its own for at most recordGrace.
func recordingCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), recordGrace)
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000]
	}
	return s
}

// Call runs one call through the whole pipeline.
func (b *Broker) Call(ctx context.Context, caller Caller, req Request) Result {
	start := time.Now()
	res := b.call(ctx, caller, req)
	if b.o.Meter != nil {
		outcome := string(res.Decision.Outcome)
		if outcome == "" {
			outcome = string(policy.Deny)
		}
		b.o.Meter.CallDone(outcome, res.Code, time.Since(start))
	}
	return res
}

func (b *Broker) call(ctx context.Context, caller Caller, req Request) Result {
	if len(req.Params) == 0 {
		req.Params = json.RawMessage("{}")
	}
	callID := newID("call_")
	if req.CallID != "" {
		if !validFiringID(req.CallID) {
			return Result{Decision: denyDecision(), CallID: callID, Code: policy.CodeInvalidRequest, Message: "the call's id must be a firing's"}
		}
		callID = req.CallID
	}
	var f facts
	d := b.decide(ctx, caller, req, &f)
	f.paramsHash, f.hashed = paramsHash(req), true // every record of the call names them
	res := Result{Decision: d, CallID: callID}
	if req.DryRun && f.cap.Cap != nil && !f.cap.Cap.DryRun && d.Outcome != policy.Deny {
		res.Decision.Outcome = policy.Deny
		return b.refuse(ctx, f, caller, req, res, policy.CodeInvalidRequest, "the capability declares no dry run: call it without dry_run")
	}
	if f.mandateErr != nil && d.Outcome != policy.Deny {
		// Without the person's mandates the call cannot be decided: one may narrow it.
		res.Decision.Outcome = policy.Deny
		return b.refuse(ctx, f, caller, req, res, CodeExecutionFailed, errMandates)
	}

	if d.Outcome == policy.Ask && !caller.NeverAsk {
		// A client disabled or removed since it was authenticated asks the person nothing.
		if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
			code, msg := clientRefusal(err)
			res.Decision.Outcome = policy.Deny
			return b.refuse(ctx, f, caller, req, res, code, msg)
		}
		cid, granted, denied, err := b.ask(ctx, f, caller, req, callID, d)
		res.ConsentID = cid
		switch {
		case errors.Is(err, errAskUnrecorded):
			// Nothing waits on the person unaudited: the request was withdrawn.
			return Result{Decision: denyDecision(), CallID: callID, ConsentID: cid, Code: CodeExecutionFailed, Message: errAuditRefused}
		case err != nil:
			res.Decision.Outcome = policy.Deny
			code, msg := askRefusal(err)
			if code == policy.CodeConsentRequired {
				res.Decision.Outcome = policy.Ask // still pending: the answer names it
			}
			return b.refuse(ctx, f, caller, req, res, code, msg)
		}
		f.call.ConsentGranted, f.call.ConsentDenied = granted, denied
		d = policy.Decide(&f.call)
		res.Decision = d
	}
	if !d.Allowed() {
		return b.refuse(ctx, f, caller, req, res, d.Code, d.Explanation)
	}
	// A use is taken atomically, in the store, when the call is allowed: the decision read
	// the token's state from the cache, and the store is the authority at use. A root token
	// with no use limit has nothing to count, so it is only checked (not revoked, not
	// expired) by a read; a derived token always takes a use, since its uses count against
	// every ancestor.
	if d.UseToken {
		var err error
		if f.tok.Constraints.MaxUses > 0 || f.tok.ParentID != "" {
			var n int64
			if n, err = b.o.Store.TakeUse(ctx, f.tok.ID, b.o.Now()); err == nil {
				b.tookUse(f.tok.ID, n)
			}
		} else {
			err = b.checkAtUse(ctx, f.tok, b.o.Now())
		}
		if err != nil {
			b.forgetToken(f.tok.ID)
			code, msg := policy.CodeInvalidToken, "the token cannot be used"
			switch {
			case errors.Is(err, store.ErrExhausted):
				code, msg = policy.CodeTokenExhausted, "the token has no uses left"
			case errors.Is(err, store.ErrExpired):
				code, msg = policy.CodeTokenExpired, "the token has expired"
			case errors.Is(err, store.ErrRevoked):
				msg = "the token is revoked"
			case errors.Is(err, store.ErrClientDisabled):
				code, msg = clientRefusal(ErrClientRefused)
			}
			res.Decision.Outcome = policy.Deny
			return b.refuse(ctx, f, caller, req, res, code, msg)
		}
	} else if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
		// A call without a token has no token to check at use: its client is checked
		// instead, so that a client disabled or removed by another process (the CLI, another
		// replica) is refused at its very next call, whatever a front's cache still holds.
		code, msg := clientRefusal(err)
		res.Decision.Outcome = policy.Deny
		return b.refuse(ctx, f, caller, req, res, code, msg)
	}
	// A call that changes something runs only once its decision record is durable. A read,
	// which changes nothing, runs first: its decision and outcome records are then written
	// together, in one commit, the outcome only if the decision is (audit.Writer.SubmitPair),
	// and its answer leaves only once both are durable. So the log never holds one without
	// the other, a read whose records fail is refused like any call, and a read waits for one
	// commit, not two in a row.
	if b.readsOnly(f) && d.DelayedCommit == 0 {
		rec := b.auditRecord(f, caller, req, callID, "decision", string(policy.Allow), "", d.Explanation, "allowed", res.ConsentID, 0)
		return b.run(ctx, f, caller, req, res, &rec)
	}
	if err := b.record(ctx, f, caller, req, callID, "decision", string(policy.Allow), "", d.Explanation, "allowed", res.ConsentID, 0); err != nil {
		return Result{Decision: denyDecision(), CallID: callID, Code: CodeExecutionFailed, Message: errAuditRefused}
	}
	if d.DelayedCommit > 0 {
		creq := b.consentRequest(f, caller, req, consent.KindCommit)
		id, err := b.o.Consent.Commit(ctx, creq, d.DelayedCommit)
		res.ConsentID = id
		if err != nil {
			code, msg := commitRefusal(err)
			return b.outcome(ctx, f, caller, req, res, nil, 0, code, msg)
		}
	}
	return b.run(ctx, f, caller, req, res, nil)
}

// ErrClientRefused is a client disabled or removed since a front authenticated it: its call,
// token request or derivation is refused.
var ErrClientRefused = errors.New("the client is disabled or removed")

// clientAtUse reads the client from the store: ErrClientRefused when it is gone or disabled.
func (b *Broker) clientAtUse(ctx context.Context, id string) error {
	c, err := b.o.Store.GetClient(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrClientRefused
	case err != nil:
		return fmt.Errorf("broker: check the client: %w", err)
	case c.Disabled:
		return ErrClientRefused
	}
	return nil
}

// clientRefusal is the code and message of a call refused by clientAtUse's error.
func clientRefusal(err error) (string, string) {
	if errors.Is(err, ErrClientRefused) {
		return policy.CodePermissionDenied, "the client is disabled or removed"
	}
	return CodeExecutionFailed, "the client could not be checked"
}

// errUndoLost is the message of a call that ran and whose undo could not be saved.
const errUndoLost = "the call ran, but its undo could not be saved: it cannot be undone"

// errMandates is the message of a call refused because the person's mandates could not be
// read.
const errMandates = "the call was refused: the person's mandates could not be read"

// commitRefusal is the code and message of a call that did not run because its
// delayed-commit window ended with Commit's err: what happened, since only a cancel is the
// person's doing.
func commitRefusal(err error) (string, string) {
	switch {
	case errors.Is(err, consent.ErrCancelled):
		return policy.CodeConsentDenied, "the person cancelled the call during its delayed-commit window"
	case errors.Is(err, consent.ErrDenied):
		return policy.CodeConsentDenied, "the call's delayed commit was denied, by the person or because no approval surface could show it; it did not run"
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout, "the call's deadline passed during its delayed-commit window; it did not run"
	case errors.Is(err, context.Canceled):
		return CodeExecutionFailed, "the caller went away during the call's delayed-commit window; it did not run"
	case errors.Is(err, consent.ErrExpired):
		return CodeExecutionFailed, "the end of the call's delayed-commit window could not be recorded in time; it did not run"
	case errors.Is(err, ErrConsentMismatch):
		return policy.CodeInvalidRequest, "the consent request named is not this client's request for this call; nothing was asked"
	case errors.Is(err, ErrConsentSpent):
		return policy.CodeInvalidRequest, "the approval named was already used: it allows one call"
	case errors.Is(err, consent.ErrInvalidRequest):
		return CodeExecutionFailed, "the call's delayed-commit window could not be opened (its request breaks a rule of the approval surface); it did not run"
	}
	return CodeExecutionFailed, "the call's delayed-commit window could not be kept (the store failed); it did not run"
}

// errAskUnrecorded is an ask whose decision record could not be written: the request is
// withdrawn and the call refused, as any call whose record fails.
var errAskUnrecorded = errors.New("the ask's audit record could not be written")

// errNoAnswer is an ask that stopped waiting before the person answered: the request stays
// pending, and the answer names it.
var errNoAnswer = errors.New("no answer yet")

// askRefusal is the code and message of a call whose ask ended with err (not
// errAskUnrecorded).
func askRefusal(err error) (string, string) {
	switch {
	case errors.Is(err, errNoAnswer):
		return policy.CodeConsentRequired, "the call waits for the person's consent: no answer yet"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return policy.CodeConsentRequired, "the call waits for the person's consent: the caller stopped waiting"
	case errors.Is(err, ErrConsentMismatch):
		return policy.CodeInvalidRequest, "the consent request named is not this client's request for this call; nothing was asked"
	case errors.Is(err, ErrConsentSpent):
		return policy.CodeInvalidRequest, "the approval named was already used: it allows one call"
	case errors.Is(err, consent.ErrInvalidRequest):
		return CodeExecutionFailed, "the call needs the person's consent, and it cannot be shown to them as it is; nothing was asked"
	}
	return CodeExecutionFailed, "the call needs the person's consent, and the request could not be made or its answer read (the store failed)"
}

// byRefused answers a consent request whose call was refused before the person was asked
// (its audit record could not be written). It starts with "capgate:", which no person's
// answer can.
const byRefused = "capgate: call refused"

// errAuditRefused is the message of a call refused because its audit record could not be
// written.
const errAuditRefused = "the call was refused: its audit record could not be written"

func denyDecision() policy.Decision { return policy.Decision{Outcome: policy.Deny} }

func (b *Broker) consentRequest(f facts, caller Caller, req Request, kind string) consent.Request {
	c := f.call.Capability
	if c == nil {
		c = &manifest.Capability{}
	}
	// The request is a stored and shown payload: its ids are text, as the audit record's.
	r := consent.Request{
		ClientID: caller.ClientID, ClientName: caller.Name, Kind: kind, CapabilityID: f.cap.ID.String(), Permission: f.perm.String(),
		Summary: c.Name, Params: req.Params, Risk: string(c.Risk), SideEffects: string(c.SideEffects),
		Reversibility: string(policy.Reversibility(c)), AuditTag: f.tok.AuditTag,
	}
	if c.Compensation != "" {
		r.Remedy = c.Compensation
	}
	if c.UndoWindowMS != nil && *c.UndoWindowMS > 0 {
		r.UndoWindowMS = *c.UndoWindowMS
	}
	return r
}

// ask creates a consent request for this one call and waits for the answer. Its record is
// durable before anyone is asked: when it cannot be written, the request is withdrawn and
// ask returns errAskUnrecorded. errNoAnswer (the request stays pending) when the wait ends
// first, ctx's error when the caller stops waiting, another error when something broke.
func (b *Broker) ask(ctx context.Context, f facts, caller Caller, req Request, callID string, d policy.Decision) (id string, granted, denied bool, err error) {
	var c store.Consent
	result := "consent requested"
	if req.Consent != "" {
		if c, err = b.resumeCall(ctx, b.consentRequest(f, caller, req, consent.KindCall), req.Consent); err != nil {
			return "", false, false, err
		}
		result = "consent awaited"
	} else if c, err = b.o.Consent.Ask(ctx, b.consentRequest(f, caller, req, consent.KindCall)); err != nil {
		return "", false, false, err
	}
	id = c.ID
	if err := b.record(ctx, f, caller, req, callID, "decision", string(policy.Ask), d.Code, d.Explanation, result, id, 0); err != nil {
		if req.Consent == "" {
			b.withdrawAsk(ctx, id)
		}
		return id, false, false, errAskUnrecorded
	}
	if c.State == store.ConsentPending {
		if req.AskOnly {
			return id, false, false, errNoAnswer
		}
		if req.OnConsent != nil {
			req.OnConsent(id)
		}
		wctx, cancel := context.WithTimeout(ctx, b.o.ConsentWait)
		defer cancel()
		c, err = b.o.Consent.Wait(wctx, id)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			if req.WithdrawOnCancel {
				b.withdrawAsk(ctx, id)
			}
			return id, false, false, ctx.Err()
		case wctx.Err() != nil:
			return id, false, false, errNoAnswer
		default:
			return id, false, false, err
		}
	}
	if c.State != store.ConsentApproved {
		return id, false, true, nil
	}
	// An approval is for one call: the first to reach here takes it, on any replica.
	if err := b.spend(ctx, id); err != nil {
		return id, false, false, err
	}
	return id, true, false, nil
}

// withdrawAsk cancels the pending request id of a call that is refused before anyone may
// answer it, on a context of its own (the call's may be done). A request answered meanwhile
// is left as it is: its call does not run either way.
func (b *Broker) withdrawAsk(ctx context.Context, id string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.o.Store.AnswerConsent(wctx, id, store.ConsentCancelled, byRefused, "", b.o.Now()); err == nil {
		b.o.Consent.Changed()
	}
}

func (b *Broker) refuse(ctx context.Context, f facts, caller Caller, req Request, res Result, code, msg string) Result {
	res.Code, res.Message = code, msg
	if res.Decision.Outcome == policy.Allow {
		res.Decision.Outcome = policy.Deny
	}
	outcome := string(res.Decision.Outcome)
	if outcome == "" {
		outcome = string(policy.Deny)
	}
	rctx, cancel := recordingCtx(ctx)
	defer cancel()
	if err := b.record(rctx, f, caller, req, res.CallID, "decision", outcome, code, msg, "refused", res.ConsentID, 0); err != nil {
		res.Message += " (and its audit record could not be written)"
	}
	return res
}

// run invokes the provider and records the outcome. decided is the decision record of a
// read, to be written with the outcome (nil when it is durable already).
func (b *Broker) run(ctx context.Context, f facts, caller Caller, req Request, res Result, decided *audit.Record) Result {
	c := f.cap.Cap
	h := f.h
	if h == nil {
		return b.outcome(ctx, f, caller, req, res, decided, 0, policy.CodeAppNotFound, "the app is registered but not running")
	}
	timeout := b.timeout(f)
	rep := &sdk.Report{DryRun: req.DryRun}
	rctx, cancel := context.WithTimeout(sdk.WithReport(ctx, rep), timeout)
	defer cancel()
	ic := sdk.InvocationContext{Source: sdk.SourceAgent, Timestamp: b.o.Now(), AppID: f.cap.App.ID.String(), ClientID: caller.ClientID, CallID: res.CallID}
	if f.hasToken {
		ic.WatchRevocation = b.watchRevocation(f.tok.ID)
	}
	params := req.Params
	if len(f.resolved) > 0 {
		var err error
		if params, err = withResolved(req.Params, f.resolved); err != nil {
			return b.outcome(ctx, f, caller, req, res, decided, 0, CodeExecutionFailed, "the checked paths could not be passed to the capability")
		}
	}
	start := time.Now()
	out, err := invoke(rctx, h, f.cap.ID.String(), params, ic)
	dur := time.Since(start)
	if err == nil && rctx.Err() != nil {
		err = rctx.Err()
	}
	if err != nil {
		e := sdk.AsError(err, f.cap.ID.String())
		code := e.Code.GatewayCode()
		msg := "the capability failed"
		if e.Code == sdk.CodeTimeout || errors.Is(err, context.DeadlineExceeded) {
			code = CodeTimeout
			if rctx.Err() == nil && e.ElapsedMS > 0 {
				// The provider's own limit (the timeout the call asked for), not the
				// gateway's bound on the capability: say how long it ran.
				msg = fmt.Sprintf("the capability stopped at the time limit of the call, after %d ms", e.ElapsedMS)
			} else {
				msg = fmt.Sprintf("the capability did not finish within its limit of %d ms", timeout.Milliseconds())
			}
		} else if e.Reason != "" {
			msg = e.Reason
		}
		return b.outcome(ctx, f, caller, req, res, decided, dur, code, msg)
	}
	// Held to its declaration: what the call reports having done (for a provider process, the
	// effects on its terminal message) may not exceed what its capability declares.
	if msg := sdk.Unheld(c.SideEffects, req.DryRun, rep.Effects()); msg != "" {
		return b.outcome(ctx, f, caller, req, res, decided, dur, CodeExecutionFailed, msg)
	}
	if missing := missingEvidence(c.Evidence, rep.Evidence()); len(missing) > 0 {
		res.partial = "the call did not emit its declared evidence: " + strings.Join(missing, ", ")
	}
	data := out.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if f.cap.Returns != nil && len(out.Data) > 0 {
		if err := b.validateResult(f.cap.Returns, out.Data); err != nil {
			return b.outcome(ctx, f, caller, req, res, decided, dur, CodeExecutionFailed, "the capability's result breaks its declared returns schema")
		}
	}
	res.Data = data
	if c.Reversibility == manifest.Compensable && c.Compensation != "" {
		res.Compensation = c.Compensation
	}
	if out.UndoToken != "" && c.UndoWindowMS != nil && *c.UndoWindowMS > 0 {
		until := b.o.Now().Add(time.Duration(*c.UndoWindowMS) * time.Millisecond)
		tok, err := b.saveUndo(ctx, undoRecord{AppID: f.cap.App.ID.String(), Capability: f.cap.ID.String(), ClientID: caller.ClientID, HandlerToken: out.UndoToken, Until: until.UnixMilli(), CallID: res.CallID})
		if err != nil {
			// The call ran; only its undo is lost. Say so, in the answer and the record.
			return b.outcome(ctx, f, caller, req, res, decided, dur, "", errUndoLost)
		}
		res.UndoToken, res.UndoUntil = tok, until
	}
	return b.outcome(ctx, f, caller, req, res, decided, dur, "", "")
}

func invoke(ctx context.Context, h sdk.Handler, id string, params json.RawMessage, ic sdk.InvocationContext) (out sdk.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = sdk.ExecutionFailed("the capability failed", false)
		}
	}()
	return h.Invoke(ctx, id, params, ic)
}

func (b *Broker) outcome(ctx context.Context, f facts, caller Caller, req Request, res Result, decided *audit.Record, dur time.Duration, code, msg string) Result {
	res.Code, res.Message = code, msg
	result := "success"
	expl := msg
	switch {
	case code != "":
		result = "error"
		res.Data = nil
	case res.partial != "":
		// It succeeded without all the evidence it declares: on record as PARTIAL.
		result, expl = ResultPartial, res.partial
	}
	rec := b.auditRecord(f, caller, req, res.CallID, "outcome", string(policy.Allow), code, expl, result, res.ConsentID, dur)
	var err error
	if decided == nil {
		// The decision is on record: its outcome is written even when the call's context
		// has ended, so that the log says how the call ended.
		var cancel context.CancelFunc
		ctx, cancel = recordingCtx(ctx)
		defer cancel()
	}
	if decided != nil {
		var pd, po *audit.Pending
		if pd, po, err = b.o.Audit.SubmitPair(ctx, *decided, rec); err == nil {
			if _, err = pd.Wait(ctx); err == nil {
				_, err = po.Wait(ctx)
			}
		}
	} else {
		_, err = b.o.Audit.Append(ctx, rec)
	}
	if err != nil {
		if decided != nil {
			// A read whose records are not both durable: its answer does not leave.
			return Result{Decision: denyDecision(), CallID: res.CallID, Code: CodeExecutionFailed, Message: errAuditRefused}
		}
		// The provider already ran; the outcome could not be recorded. Say so: the decision
		// record stands, and the operator sees the failure in the logs.
		res.Message = strings.TrimSpace(res.Message + " (the outcome's audit record could not be written)")
	}
	return res
}
