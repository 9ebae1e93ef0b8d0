package audit

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// maxCheckpointBytes bounds a checkpoint body VerifyCheckpoint parses: a real one is under
// 250 bytes.
const maxCheckpointBytes = 4096

// The checkpoint formats. A checkpoint of CheckpointVersion carries it in its body
// ("version") and its signature covers CheckpointContext ahead of the canonical JSON of the
// body without "signature", so that no signature of the gateway's key over anything else (a
// token) is ever a checkpoint's. A legacy checkpoint, written before, has no version and its
// signature covers the canonical {"at","head","seq"} alone: those still verify, and none is
// signed again.
const (
	CheckpointVersion = "2"
	CheckpointContext = "capgate audit checkpoint v2\x00"
)

// checkpointMessage returns what a checkpoint's signature covers: for a versioned one,
// CheckpointContext and the canonical JSON {"at","head","seq","version"}; for a legacy one
// (version ""), the canonical JSON {"at","head","seq"}.
func checkpointMessage(seq int64, head, at, version string) []byte {
	members := []jcs.Member{
		{Name: "at", Value: jcs.Value{Kind: jcs.String, Str: at}},
		{Name: "head", Value: jcs.Value{Kind: jcs.String, Str: head}},
		{Name: "seq", Value: jcs.Value{Kind: jcs.Number, Float: float64(seq)}},
	}
	var prefix []byte
	if version != "" {
		members = append(members, jcs.Member{Name: "version", Value: jcs.Value{Kind: jcs.String, Str: version}})
		prefix = []byte(CheckpointContext)
	}
	b, err := jcs.Value{Kind: jcs.Object, Members: members}.AppendCanonical(prefix)
	if err != nil {
		// Only invalid UTF-8 in head or at can fail, and neither comes from outside here
		// without checking; a failure is a bug, not an input.
		panic("audit: checkpoint message: " + err.Error())
	}
	return b
}

// formatAt writes a checkpoint's time: RFC 3339 in UTC with nanoseconds, trailing zeros
// dropped.
func formatAt(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// SignCheckpoint signs the statement "the log had seq entries and entry seq had hash head,
// at time at" with key. Body is the canonical JSON {"at","head","seq","signature","version"}:
// at in RFC 3339 UTC with nanoseconds (trailing zeros dropped), version CheckpointVersion,
// signature "ed25519:" and the standard padded base64 of the Ed25519 signature over
// CheckpointContext and the canonical JSON of the same object without "signature". The
// returned At is at in UTC, as the body says it.
//
// It panics, as ed25519.Sign does, when key is not 64 bytes, and when head is not valid
// UTF-8 (a head this package made always is).
func SignCheckpoint(key ed25519.PrivateKey, seq int64, head string, at time.Time) store.Checkpoint {
	ats := formatAt(at)
	sig := manifest.FormatSignature(ed25519.Sign(key, checkpointMessage(seq, head, ats, CheckpointVersion)))
	body, err := jcs.Value{Kind: jcs.Object, Members: []jcs.Member{
		{Name: "at", Value: jcs.Value{Kind: jcs.String, Str: ats}},
		{Name: "head", Value: jcs.Value{Kind: jcs.String, Str: head}},
		{Name: "seq", Value: jcs.Value{Kind: jcs.Number, Float: float64(seq)}},
		{Name: "signature", Value: jcs.Value{Kind: jcs.String, Str: sig}},
		{Name: "version", Value: jcs.Value{Kind: jcs.String, Str: CheckpointVersion}},
	}}.AppendCanonical(nil)
	if err != nil {
		panic("audit: checkpoint body: " + err.Error())
	}
	return store.Checkpoint{Seq: seq, Head: head, At: at.UTC(), Body: body}
}

// signedCheckpoint is a checkpoint body that passed static validation (parseCheckpoint):
// what it states and the signature it carries, not yet verified.
type signedCheckpoint struct {
	seq     int64
	head    string
	at      string
	version string // CheckpointVersion, or "" for a legacy checkpoint
	sig     []byte
}

// parseCheckpoint checks a checkpoint body statically, without its signature: canonical
// JSON with exactly the members at, head, seq, signature and version (CheckpointVersion), or
// for a legacy checkpoint the first four; at RFC 3339 UTC as
// SignCheckpoint writes it; head "sha256:" and 64 hex digits; seq an integer from 1 to
// 2^53-1; the signature in its one spelling. Failures wrap ErrBadCheckpoint.
func parseCheckpoint(body []byte) (signedCheckpoint, error) {
	fail := func(rule string) error { return fmt.Errorf("%w: %s", ErrBadCheckpoint, rule) }
	if len(body) > maxCheckpointBytes {
		return signedCheckpoint{}, fail("body too large")
	}
	v, err := jcs.Parse(body, &jcs.Options{MaxDepth: 1, ExactNumbers: true})
	if err != nil {
		return signedCheckpoint{}, fmt.Errorf("%w: body is not strict JSON: %w", ErrBadCheckpoint, err)
	}
	canon, err := v.AppendCanonical(nil)
	if err != nil || !bytes.Equal(canon, body) {
		return signedCheckpoint{}, fail("body is not in RFC 8785 canonical form")
	}
	return checkpointOf(v)
}

// checkpointOf is parseCheckpoint for a value already parsed and known to be canonical.
func checkpointOf(v jcs.Value) (signedCheckpoint, error) {
	fail := func(rule string) error { return fmt.Errorf("%w: %s", ErrBadCheckpoint, rule) }
	const shape = "body must be an object of at, head, seq, signature and version (or, written before versions, of the first four)"
	if v.Kind != jcs.Object || len(v.Members) != 4 && len(v.Members) != 5 {
		return signedCheckpoint{}, fail(shape)
	}
	names := [5]string{"at", "head", "seq", "signature", "version"}
	for i, m := range v.Members {
		if m.Name != names[i] {
			return signedCheckpoint{}, fail(shape)
		}
	}
	version := ""
	if len(v.Members) == 5 {
		if vv := v.Members[4].Value; vv.Kind != jcs.String || vv.Str != CheckpointVersion {
			return signedCheckpoint{}, fail("version: must be " + CheckpointVersion)
		}
		version = CheckpointVersion
	}
	at, head, seqv, sigv := v.Members[0].Value, v.Members[1].Value, v.Members[2].Value, v.Members[3].Value
	if at.Kind != jcs.String {
		return signedCheckpoint{}, fail("at: must be a string")
	}
	if t, err := time.Parse(time.RFC3339Nano, at.Str); err != nil || formatAt(t) != at.Str {
		return signedCheckpoint{}, fail("at: must be RFC 3339 UTC time as written by SignCheckpoint")
	}
	if head.Kind != jcs.String || !isDigest(head.Str) {
		return signedCheckpoint{}, fail(`head: must be "sha256:" and 64 lowercase hex digits`)
	}
	x := seqv.Float
	if seqv.Kind != jcs.Number || x != math.Trunc(x) || x < 1 || x > maxSafeInteger {
		return signedCheckpoint{}, fail("seq: must be an integer in 1..2^53-1")
	}
	if sigv.Kind != jcs.String {
		return signedCheckpoint{}, fail("signature: must be a string")
	}
	sig, err := manifest.ParseSignature(sigv.Str)
	if err != nil {
		return signedCheckpoint{}, fail("signature: malformed")
	}
	return signedCheckpoint{seq: int64(x), head: head.Str, at: at.Str, version: version, sig: sig}, nil
}

// verify reports whether the checkpoint's signature verifies with pub.
func (c signedCheckpoint) verify(pub ed25519.PublicKey) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, checkpointMessage(c.seq, c.head, c.at, c.version), c.sig)
}

// VerifyCheckpoint checks c strictly and returns nil when it is a checkpoint signed by pub:
// Body passes the static rules of a checkpoint (canonical JSON with exactly the members at,
// head, seq, signature and version, or a legacy checkpoint's first four; at is RFC 3339 UTC as SignCheckpoint writes it; head is "sha256:"
// and 64 hex digits; seq is an integer from 1 to 2^53-1; the signature has its one
// spelling), the signature verifies with pub over what checkpointMessage says it covers
// (with CheckpointContext for a versioned checkpoint), and c.Seq
// and c.Head are the body's. c.At is not checked: a store may keep time less precisely than
// the body does. Any failure wraps ErrBadCheckpoint. A pub that is not 32 bytes fails every
// checkpoint.
func VerifyCheckpoint(pub ed25519.PublicKey, c store.Checkpoint) error {
	fail := func(rule string) error { return fmt.Errorf("%w: %s", ErrBadCheckpoint, rule) }
	if len(pub) != ed25519.PublicKeySize {
		return fail("public key is not 32 bytes")
	}
	sc, err := parseCheckpoint(c.Body)
	if err != nil {
		return err
	}
	if !sc.verify(pub) {
		return fail("signature does not verify with the log's public key")
	}
	if c.Seq != sc.seq {
		return fail("stored seq " + strconv.FormatInt(c.Seq, 10) + " differs from the signed seq " + strconv.FormatInt(sc.seq, 10))
	}
	if c.Head != sc.head {
		return fail("stored head differs from the signed head")
	}
	return nil
}

// checkpointFromBody returns the checkpoint a body states, checked statically (not its
// signature): for a checkpoint read from a file or a witness rather than a store.
func checkpointFromBody(body []byte) (store.Checkpoint, error) {
	sc, err := parseCheckpoint(body)
	if err != nil {
		return store.Checkpoint{}, err
	}
	at, _ := time.Parse(time.RFC3339Nano, sc.at) // parseCheckpoint checked it
	return store.Checkpoint{Seq: sc.seq, Head: sc.head, At: at, Body: bytes.Clone(body)}, nil
}
