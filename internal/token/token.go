package token

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/jcs"
)

// Fixed values of the format.
const (
	// Version is the token format version this package writes, and reads with
	// LegacyVersion: from 1.1 on, the signature covers SigningContext and the canonical form,
	// so that a signature of capgate's key over anything else (an audit checkpoint) is never
	// a token's.
	Version = "1.1"
	// LegacyVersion is the format of tokens issued before 1.1, signed over the canonical form
	// alone. They verify until they expire (at most MaxLifetime after they were issued);
	// capgate never signs one again, so no new signature without a context is ever made.
	LegacyVersion = "1.0"
	// SigningContext starts the message a token's signature covers, ahead of its canonical
	// form: the domain that tells a token's signature from any other of the same key.
	SigningContext = "capgate token v1.1\x00"
	// Issuer is the issuer of every token capgate signs.
	Issuer = "capgate"
	// IDPrefix starts every token_id; 32 lowercase hex digits follow.
	IDPrefix = "cap_"
)

// Token is a capability token. Its JSON members are the token document's (token_id, version,
// issued_at, expires_at, capabilities, constraints, audit_tag, issuer, signature) and
// capgate's own (client_id, parent_id, consent_id).
//
// Evolution: the format is closed. Parse refuses members it does not know, so a new member
// needs a new Version, and a verifier that does not know it refuses the token instead of
// ignoring a restriction.
//
// Encoding: members are written in RFC 8785 canonical form; audit_tag, parent_id and
// consent_id are left out when empty, the other members are always written, and constraints
// leaves out its empty members (max_uses when 0). Any other spelling of the same token is
// refused by Parse, so a token has exactly one wire form.
type Token struct {
	ID           string      // token_id: IDPrefix and 32 lowercase hex digits, see NewID
	Version      string      // version: Version
	IssuedAt     int64       // issued_at: Unix seconds
	ExpiresAt    int64       // expires_at: Unix seconds; the token is expired from this second on
	Capabilities []string    // capabilities: permissions and patterns ending in ".*"
	Constraints  Constraints // constraints
	AuditTag     string      // audit_tag: the purpose, for people reading the audit log
	Issuer       string      // issuer: Issuer
	ClientID     string      // client_id: the client the token is bound to
	ParentID     string      // parent_id: the token it was derived from, "" for a root token
	ConsentID    string      // consent_id: the consent request that approved it, if any
	// Signature is "ed25519:" and the standard padded base64 of the signature over the
	// canonical form of the token without this member. Parse sets it; Sign ignores it.
	Signature string
}

// Constraints restrict the calls a token allows beyond the permissions it grants. The zero
// Constraints restricts nothing.
type Constraints struct {
	// MaxUses is the most calls the token allows; 0 means no limit. The store counts uses.
	MaxUses int64
	// AllowedPaths, when not empty, are the only paths the token's calls may name: absolute
	// clean patterns where "*" matches within one segment and a trailing "/**" matches a
	// folder and everything beneath it.
	AllowedPaths []string
	// AllowedCommands, when not empty, are the only programs the token's commands may run,
	// each optionally followed by the arguments every command of that program must begin
	// with ("git status").
	AllowedCommands []string
	// DeniedCommands and DeniedPatterns are commands the token never runs: a program and the
	// flags and arguments that, all present, make a command denied ("rm -rf", "shutdown").
	// The two lists mean the same; the token document names both.
	DeniedCommands []string
	DeniedPatterns []string
	// Condition, when not empty, is a CEL expression over params, permission and now that
	// must be true for a call to run.
	Condition string
}

// IsZero reports whether c restricts nothing.
func (c Constraints) IsZero() bool {
	return c.MaxUses == 0 && len(c.AllowedPaths) == 0 && len(c.AllowedCommands) == 0 &&
		len(c.DeniedCommands) == 0 && len(c.DeniedPatterns) == 0 && c.Condition == ""
}

// NewID returns a fresh token_id: IDPrefix and 32 lowercase hex digits of 16 random bytes.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead.
	return IDPrefix + hex.EncodeToString(b[:])
}

// validID reports whether s is IDPrefix and 32 lowercase hex digits.
func validID(s string) bool {
	h, ok := strings.CutPrefix(s, IDPrefix)
	if !ok || len(h) != 32 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Issued returns issued_at as a time.
func (t Token) Issued() time.Time { return time.Unix(t.IssuedAt, 0) }

// Expires returns expires_at as a time.
func (t Token) Expires() time.Time { return time.Unix(t.ExpiresAt, 0) }

// Body is the token's canonical JSON without its signature: what the store keeps of it for
// listing (grants, constraints, audit tag), which cannot be used as a token.
func (t Token) Body() ([]byte, error) { return t.canonical(false) }

// Clone returns a copy of t that shares no slices with it.
func (t Token) Clone() Token {
	t.Capabilities = slices.Clone(t.Capabilities)
	t.Constraints = t.Constraints.clone()
	return t
}

func (c Constraints) clone() Constraints {
	c.AllowedPaths = slices.Clone(c.AllowedPaths)
	c.AllowedCommands = slices.Clone(c.AllowedCommands)
	c.DeniedCommands = slices.Clone(c.DeniedCommands)
	c.DeniedPatterns = slices.Clone(c.DeniedPatterns)
	return c
}

// value returns the token as a JSON value, with its signature when withSig is set.
func (t Token) value(withSig bool) jcs.Value {
	m := []jcs.Member{
		str("token_id", t.ID),
		str("version", t.Version),
		num("issued_at", t.IssuedAt),
		num("expires_at", t.ExpiresAt),
		strList("capabilities", t.Capabilities),
		{Name: "constraints", Value: t.Constraints.value()},
		str("issuer", t.Issuer),
		str("client_id", t.ClientID),
	}
	for _, o := range []jcs.Member{
		str("audit_tag", t.AuditTag),
		str("parent_id", t.ParentID),
		str("consent_id", t.ConsentID),
	} {
		if o.Value.Str != "" {
			m = append(m, o)
		}
	}
	if withSig {
		m = append(m, str("signature", t.Signature))
	}
	return jcs.Value{Kind: jcs.Object, Members: m}
}

func (c Constraints) value() jcs.Value {
	var m []jcs.Member
	if c.MaxUses != 0 {
		m = append(m, num("max_uses", c.MaxUses))
	}
	for _, l := range []jcs.Member{
		strList("allowed_paths", c.AllowedPaths),
		strList("allowed_commands", c.AllowedCommands),
		strList("denied_commands", c.DeniedCommands),
		strList("denied_patterns", c.DeniedPatterns),
	} {
		if len(l.Value.Items) > 0 {
			m = append(m, l)
		}
	}
	if c.Condition != "" {
		m = append(m, str("condition", c.Condition))
	}
	return jcs.Value{Kind: jcs.Object, Members: m}
}

func str(name, s string) jcs.Member {
	return jcs.Member{Name: name, Value: jcs.Value{Kind: jcs.String, Str: s}}
}

func num(name string, n int64) jcs.Member {
	return jcs.Member{Name: name, Value: jcs.Value{Kind: jcs.Number, Float: float64(n)}}
}

func strList(name string, ss []string) jcs.Member {
	items := make([]jcs.Value, len(ss))
	for i, s := range ss {
		items[i] = jcs.Value{Kind: jcs.String, Str: s}
	}
	return jcs.Member{Name: name, Value: jcs.Value{Kind: jcs.Array, Items: items}}
}

// canonical returns the RFC 8785 form of the token, with or without its signature.
func (t Token) canonical(withSig bool) ([]byte, error) {
	if t.IssuedAt < 0 || t.IssuedAt > maxSafeInteger || t.ExpiresAt < 0 || t.ExpiresAt > maxSafeInteger ||
		t.Constraints.MaxUses < 0 || t.Constraints.MaxUses > maxSafeInteger {
		return nil, malformed("a time or count is outside 0..2^53-1")
	}
	b, err := t.value(withSig).AppendCanonical(nil)
	if err != nil {
		return nil, malformed("a string is not valid UTF-8")
	}
	return b, nil
}

// decode reads a token from its parsed JSON, refusing unknown members and wrong types. It
// does not check that the JSON was canonical; Parse does that by encoding the result again.
func decode(v jcs.Value) (Token, error) {
	var t Token
	if v.Kind != jcs.Object {
		return t, malformed("not a JSON object")
	}
	var err error
	for _, m := range v.Members {
		switch m.Name {
		case "token_id":
			t.ID, err = getStr(m)
		case "version":
			t.Version, err = getStr(m)
		case "issued_at":
			t.IssuedAt, err = getInt(m)
		case "expires_at":
			t.ExpiresAt, err = getInt(m)
		case "capabilities":
			t.Capabilities, err = getList(m)
		case "constraints":
			t.Constraints, err = decodeConstraints(m.Value)
		case "audit_tag":
			t.AuditTag, err = getStr(m)
		case "issuer":
			t.Issuer, err = getStr(m)
		case "client_id":
			t.ClientID, err = getStr(m)
		case "parent_id":
			t.ParentID, err = getStr(m)
		case "consent_id":
			t.ConsentID, err = getStr(m)
		case "signature":
			t.Signature, err = getStr(m)
		default:
			return Token{}, malformed("unknown member")
		}
		if err != nil {
			return Token{}, err
		}
	}
	for _, req := range []string{"token_id", "version", "issued_at", "expires_at", "capabilities", "constraints", "issuer", "client_id", "signature"} {
		if _, ok := v.Get(req); !ok {
			return Token{}, malformed("missing member " + req)
		}
	}
	return t, nil
}

func decodeConstraints(v jcs.Value) (Constraints, error) {
	var c Constraints
	if v.Kind != jcs.Object {
		return c, malformed("constraints: not an object")
	}
	var err error
	for _, m := range v.Members {
		switch m.Name {
		case "max_uses":
			c.MaxUses, err = getInt(m)
		case "allowed_paths":
			c.AllowedPaths, err = getList(m)
		case "allowed_commands":
			c.AllowedCommands, err = getList(m)
		case "denied_commands":
			c.DeniedCommands, err = getList(m)
		case "denied_patterns":
			c.DeniedPatterns, err = getList(m)
		case "condition":
			c.Condition, err = getStr(m)
		default:
			return Constraints{}, malformed("constraints: unknown member")
		}
		if err != nil {
			return Constraints{}, err
		}
	}
	return c, nil
}

func getStr(m jcs.Member) (string, error) {
	if m.Value.Kind != jcs.String {
		return "", malformed(m.Name + ": not a string")
	}
	return strings.Clone(m.Value.Str), nil
}

func getInt(m jcs.Member) (int64, error) {
	f := m.Value.Float
	if m.Value.Kind != jcs.Number || f != float64(int64(f)) || f < 0 || f > maxSafeInteger {
		return 0, malformed(m.Name + ": not an integer in 0..2^53-1")
	}
	return int64(f), nil
}

func getList(m jcs.Member) ([]string, error) {
	if m.Value.Kind != jcs.Array {
		return nil, malformed(m.Name + ": not an array")
	}
	out := make([]string, 0, len(m.Value.Items))
	for _, it := range m.Value.Items {
		if it.Kind != jcs.String {
			return nil, malformed(m.Name + ": not an array of strings")
		}
		out = append(out, strings.Clone(it.Str))
	}
	return out, nil
}
