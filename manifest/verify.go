package manifest

import (
	"crypto/ed25519"
	"errors"
	"time"
)

// Tier is how far capgate trusts an app's manifest.
type Tier int

const (
	// Tier1 is a manifest whose signature verified against the trusted key of its app_id.
	Tier1 Tier = 1
	// Tier2 is anything else: unsigned, a bad signature, no trusted key, or an invalid
	// manifest. The app stays usable, but its capabilities never act above read without consent.
	Tier2 Tier = 2
)

// Reason says why a manifest got its tier.
type Reason string

// The reasons of a Verification.
const (
	ReasonVerified           Reason = "verified"
	ReasonUnsigned           Reason = "unsigned"
	ReasonMalformedSignature Reason = "malformed_signature"
	ReasonNoTrustedKey       Reason = "no_trusted_key"
	ReasonBadSignature       Reason = "bad_signature"
	ReasonInvalidManifest    Reason = "invalid_manifest"
)

// Verification is the outcome of verifying a manifest: a value, never an error, since a
// manifest that fails to verify is still usable at Tier 2. The zero Verification is not
// trusted.
type Verification struct {
	AppID    string            `json:"app_id"`
	Tier     Tier              `json:"tier"`
	Reason   Reason            `json:"reason"`
	Detail   string            `json:"detail,omitempty"`   // a sentence for people, never key material
	Problems Problems          `json:"problems,omitempty"` // for ReasonInvalidManifest
	Key      ed25519.PublicKey `json:"-"`                  // the trusted key that verified, at Tier 1
}

// Trusted reports whether v is Tier 1.
func (v Verification) Trusted() bool { return v.Tier == Tier1 && v.Reason == ReasonVerified }

// KeySource gives the trusted public keys of an app. Keys returns every key trusted for the
// app id (more than one during a key rotation's overlap) or an error saying why there are
// none; it must be safe for concurrent use. keys.TrustStore is the file-backed KeySource.
type KeySource interface {
	Keys(appID string) ([]ed25519.PublicKey, error)
}

// Verify decides the tier of a parsed document: it validates the manifest fully, then checks
// its signature against every key that keys trusts for the manifest's app_id. Any failure
// gives Tier 2 with the reason.
func Verify(doc *Document, keys KeySource) Verification { return verify(doc, keys, nil) }

func verify(doc *Document, keys KeySource, t *Timings) Verification {
	start := time.Now()
	v := Verification{AppID: doc.manifest.AppID, Tier: Tier2}
	ps := doc.Validate()
	t.mark(stageCompile, &start)
	if len(ps) > 0 {
		v.Reason, v.Detail, v.Problems = ReasonInvalidManifest, "the manifest breaks the format's rules", ps
		return v
	}
	text, ok := doc.Signature()
	if !ok {
		v.Reason, v.Detail = ReasonUnsigned, "the manifest has no signature"
		return v
	}
	sig, err := ParseSignature(text)
	if err != nil {
		v.Reason, v.Detail = ReasonMalformedSignature, err.Error()
		return v
	}
	if keys == nil {
		v.Reason, v.Detail = ReasonNoTrustedKey, "no trusted keys are configured"
		return v
	}
	trusted, err := keys.Keys(doc.manifest.AppID)
	if err != nil || len(trusted) == 0 {
		v.Reason, v.Detail = ReasonNoTrustedKey, "no trusted key for this app_id"
		if err != nil {
			v.Detail = err.Error()
		}
		return v
	}
	t.mark(stageKeys, &start)
	defer t.mark(stageSignature, &start)
	for _, k := range trusted {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, doc.canonical, sig) {
			return Verification{AppID: v.AppID, Tier: Tier1, Reason: ReasonVerified, Key: k}
		}
	}
	v.Reason, v.Detail = ReasonBadSignature, "the signature does not verify with any trusted key of this app_id"
	return v
}

// VerifyBytes parses data, a manifest's JSON, and verifies it as Verify does. Data that does
// not parse (the YAML authoring form included: sign it into JSON first) is Tier 2 with
// ReasonInvalidManifest.
func VerifyBytes(data []byte, keys KeySource) Verification {
	doc, err := Parse(data)
	if err != nil {
		return invalid(err)
	}
	return Verify(doc, keys)
}

// Timings is how long each stage of loading and verifying one JSON manifest took, for
// capgate bench and for operators asking where load time goes.
type Timings struct {
	Parse        time.Duration // strict JSON parse
	Decode       time.Duration // decoding into the model and the static rules
	Canonicalize time.Duration // RFC 8785 form without the signature
	Compile      time.Duration // compiling every parameters, returns and payload schema
	Keys         time.Duration // looking up the trusted keys
	Signature    time.Duration // Ed25519 verification
}

// Total returns the sum of the stages.
func (t Timings) Total() time.Duration {
	return t.Parse + t.Decode + t.Canonicalize + t.Compile + t.Keys + t.Signature
}

type stage int

const (
	stageParse stage = iota
	stageDecode
	stageCanonicalize
	stageCompile
	stageKeys
	stageSignature
)

// mark adds the time since *start to a stage and restarts the clock. A nil t records nothing.
func (t *Timings) mark(s stage, start *time.Time) {
	if t == nil {
		return
	}
	now := time.Now()
	d := now.Sub(*start)
	*start = now
	switch s {
	case stageParse:
		t.Parse += d
	case stageDecode:
		t.Decode += d
	case stageCanonicalize:
		t.Canonicalize += d
	case stageCompile:
		t.Compile += d
	case stageKeys:
		t.Keys += d
	case stageSignature:
		t.Signature += d
	}
}

// VerifyTimed parses and verifies a JSON manifest as VerifyBytes does, and reports how long
// each stage took.
func VerifyTimed(data []byte, keys KeySource) (Verification, Timings) {
	var t Timings
	doc, err := parse(data, &t)
	if err != nil {
		return invalid(err), t
	}
	return verify(doc, keys, &t), t
}

func invalid(err error) Verification {
	v := Verification{Tier: Tier2, Reason: ReasonInvalidManifest, Detail: "the manifest does not parse"}
	var se *SyntaxError
	if errors.As(err, &se) {
		v.Problems = Problems{se.Problem()}
	}
	return v
}
