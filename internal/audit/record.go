package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/jcs"
)

// Kinds of record: one for every decision and one for every outcome of a call that ran.
const (
	KindDecision = "decision"
	KindOutcome  = "outcome"
)

// Decisions, as "Deciding a call" in DESIGN.md names them.
const (
	DecisionAllow   = "allow"
	DecisionAsk     = "ask"
	DecisionHandoff = "handoff"
	DecisionDeny    = "deny"
)

// Record is one audit record: who asked for what, what was decided and, for an outcome, what
// came of it. The first eight fields are the token document's ("Audit Logging"); the rest
// are capgate's. Raw params are never recorded, only ParamsHash.
//
// A record is written as the RFC 8785 canonical JSON of an object with exactly these
// eighteen members, every one always present ("" and 0 for unset), strings and integers
// only. Evolution: a new field, or a new meaning for an old one, is a new chain version
// ("capgate-audit-v2"), never a silent addition, because Verify refuses unknown members.
type Record struct {
	Timestamp   int64  // "timestamp": Unix seconds; Writer.Append sets it when zero
	TokenID     string // "token_id": the token used, "" for none
	Action      string // "action": the envelope's action, such as "execute" or "request_capability"
	App         string // "app": the app as the caller named it (alias or app_id)
	Method      string // "method": the method as the caller named it
	ParamsHash  string // "params_hash": ParamsHash of the params, "" when they were not JSON
	Result      string // "result": what came of the call, such as "success" or "error"
	AuditTag    string // "audit_tag": the token's audit tag
	Decision    string // "decision": allow, ask, handoff or deny
	Code        string // "code": the error code of a refusal or failure, "" for none
	Explanation string // "explanation": why, for a person; field paths, never values
	ClientID    string // "client_id": the client that called
	Capability  string // "capability": the resolved capability id
	Permission  string // "permission": the permission the call needed
	CallID      string // "call_id": links a decision to its outcome
	ConsentID   string // "consent_id": the consent request asked or answered, "" for none
	DurationMS  int64  // "duration_ms": how long the call ran, for an outcome
	Kind        string // "kind": decision or outcome
}

// field is one member of a record's JSON form: exactly one of s and n is set. Its name is
// fieldNames' at its index, apart from the pointers into the record, so that an error naming
// it never lets the record escape to the heap.
type field struct {
	s   *string
	n   *int64
	max int // longest value in bytes, for strings
}

// fieldNames are the names of a record's members, in canonical (sorted) order.
var fieldNames = [18]string{"action", "app", "audit_tag", "call_id", "capability", "client_id", "code", "consent_id", "decision", "duration_ms", "explanation", "kind", "method", "params_hash", "permission", "result", "timestamp", "token_id"}

// fields lists the members of r's JSON form, in canonical (sorted) order.
func (r *Record) fields() [18]field {
	return [...]field{
		{s: &r.Action, max: MaxFieldBytes},
		{s: &r.App, max: MaxFieldBytes},
		{s: &r.AuditTag, max: MaxFieldBytes},
		{s: &r.CallID, max: MaxFieldBytes},
		{s: &r.Capability, max: MaxFieldBytes},
		{s: &r.ClientID, max: MaxFieldBytes},
		{s: &r.Code, max: MaxFieldBytes},
		{s: &r.ConsentID, max: MaxFieldBytes},
		{s: &r.Decision, max: MaxFieldBytes},
		{n: &r.DurationMS},
		{s: &r.Explanation, max: MaxExplanationBytes},
		{s: &r.Kind, max: MaxFieldBytes},
		{s: &r.Method, max: MaxFieldBytes},
		{s: &r.ParamsHash, max: MaxFieldBytes},
		{s: &r.Permission, max: MaxFieldBytes},
		{s: &r.Result, max: MaxFieldBytes},
		{n: &r.Timestamp},
		{s: &r.TokenID, max: MaxFieldBytes},
	}
}

// Validate reports every rule r breaks, joined, each wrapping ErrInvalidRecord and naming
// the field, never its value: kind is decision or outcome; decision is allow, ask, handoff
// or deny; a deny carries a code; code is "" or an upper-case code such as
// CAPABILITY_DENIED; params_hash is "" or "sha256:" and 64 lowercase hex digits; timestamp
// is positive and duration_ms not negative, both at most 2^53-1; every string is valid
// UTF-8 within its length limit (limits.go).
func (r *Record) Validate() error {
	var errs []error
	bad := func(name, rule string) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidRecord, name, rule))
	}
	fs := r.fields()
	for i, f := range fs {
		switch {
		case f.s != nil && len(*f.s) > f.max:
			bad(fieldNames[i], fmt.Sprintf("longer than %d bytes", f.max))
		case f.s != nil && !utf8.ValidString(*f.s):
			bad(fieldNames[i], "not valid UTF-8")
		case f.n != nil && (*f.n < 0 || *f.n > maxSafeInteger):
			bad(fieldNames[i], "outside 0..2^53-1")
		}
	}
	switch r.Kind {
	case KindDecision, KindOutcome:
	default:
		bad("kind", "must be decision or outcome")
	}
	switch r.Decision {
	case DecisionAllow, DecisionAsk, DecisionHandoff, DecisionDeny:
	default:
		bad("decision", "must be allow, ask, handoff or deny")
	}
	if r.Code != "" && !isCode(r.Code) {
		bad("code", "must be upper-case letters, digits and underscores, starting with a letter, at most 64")
	}
	if r.Decision == DecisionDeny && r.Code == "" {
		bad("code", "a deny must carry an error code")
	}
	if r.ParamsHash != "" && !isDigest(r.ParamsHash) {
		bad("params_hash", `must be "sha256:" and 64 lowercase hex digits`)
	}
	if r.Timestamp == 0 {
		bad("timestamp", "must be set")
	}
	return errors.Join(errs...)
}

// isCode reports whether s has the form of an error code: [A-Z][A-Z0-9_]{0,63}. The set of
// codes belongs to the broker; the log checks only the form, so that a new code never
// makes every call it ends unauditable (and so refused).
func isCode(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isDigest reports whether s is "sha256:" and 64 lowercase hex digits.
func isDigest(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Body validates r and returns its canonical JSON: the bytes an entry stores and hashes.
func (r *Record) Body() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	// The canonical form written directly: the members are in sorted order already, their
	// names need no escape, and every number is an integer in 0..2^53-1, which RFC 8785
	// writes as its decimal digits.
	fs := r.fields()
	// Room for every member as written when no character needs an escape, so that the body
	// is one allocation of about its size.
	n := 2
	for i, f := range fs {
		n += len(fieldNames[i]) + 4 + 20
		if f.s != nil {
			n += len(*f.s) + 2
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, fieldNames[i]...)
		b = append(b, '"', ':')
		if f.s == nil {
			b = strconv.AppendInt(b, *f.n, 10)
			continue
		}
		var ok bool
		if b, ok = jcs.AppendString(b, *f.s); !ok {
			return nil, fmt.Errorf("%w: %s: not valid UTF-8", ErrInvalidRecord, fieldNames[i]) // Validate refused it already
		}
	}
	return append(b, '}'), nil
}

// MarshalJSON is the record's body: its canonical JSON form with the token document's field
// names, as the log stores it and the mirror and the export print it.
func (r Record) MarshalJSON() ([]byte, error) { return r.Body() }

// DecodeRecord reads an entry body strictly: it must be at most MaxBodyBytes, the RFC 8785
// canonical form of itself, an object with exactly the eighteen members of a Record (strings
// as strings, integers as numbers), and a Record that Validate accepts. Anything else is an
// error wrapping ErrInvalidRecord that names the member, never its value.
func DecodeRecord(body []byte) (Record, error) {
	var r Record
	fail := func(rule string) (Record, error) {
		return Record{}, fmt.Errorf("%w: %s", ErrInvalidRecord, rule)
	}
	if len(body) > MaxBodyBytes {
		return fail(fmt.Sprintf("body longer than %d bytes", MaxBodyBytes))
	}
	v, err := jcs.Parse(body, &jcs.Options{MaxDepth: 1, ExactNumbers: true, MaxBytes: MaxBodyBytes})
	if err != nil {
		return Record{}, fmt.Errorf("%w: body is not strict JSON: %w", ErrInvalidRecord, err)
	}
	canon, err := v.AppendCanonical(nil)
	if err != nil || !bytes.Equal(canon, body) {
		return fail("body is not in RFC 8785 canonical form")
	}
	if v.Kind != jcs.Object {
		return fail("body is not an object")
	}
	fs := r.fields()
	if len(v.Members) != len(fs) {
		return fail(fmt.Sprintf("body has %d members, a record has %d", len(v.Members), len(fs)))
	}
	// Canonical order is sorted order, which is the order of fields(), so member i must be
	// field i.
	for i, m := range v.Members {
		f, name := fs[i], fieldNames[i]
		if m.Name != name {
			return fail(fmt.Sprintf("member %d: unknown member name, expected %s", i, name))
		}
		switch {
		case f.s != nil:
			if m.Value.Kind != jcs.String {
				return fail(name + ": must be a string")
			}
			*f.s = m.Value.Str
		default:
			x := m.Value.Float
			if m.Value.Kind != jcs.Number || x != math.Trunc(x) || x < 0 || x > maxSafeInteger {
				return fail(name + ": must be an integer in 0..2^53-1")
			}
			*f.n = int64(x)
		}
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// ParamsHash returns "sha256:" and the lowercase hex SHA-256 of the RFC 8785 canonical form
// of params, so that the same params hash alike however they were spelled. It returns the
// jcs error (a *jcs.SyntaxError, which never quotes the input) for params that are not
// strict JSON, including empty input.
func ParamsHash(params []byte) (string, error) {
	canon, err := jcs.Canonicalize(params)
	if err != nil {
		return "", fmt.Errorf("audit: params hash: %w", err)
	}
	return ParamsHashOfCanonical(canon), nil
}

// ParamsHashOfCanonical is ParamsHash of params that are their own canonical form already (a
// front made them so): the hash of the bytes as they are, without parsing them again.
func ParamsHashOfCanonical(canon []byte) string {
	return hashText(sha256.Sum256(canon))
}
