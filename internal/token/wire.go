package token

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// WirePrefix starts every wire form; the 1 is the wire encoding's version, not the token's.
const WirePrefix = "cgt1."

var b64 = base64.RawURLEncoding.Strict()

// Sign validates t (see Validate), signs the canonical form of t without its signature with
// key, and returns the wire form: WirePrefix and the unpadded base64url of the canonical JSON
// of the whole token. An empty Version or Issuer is filled with the package's; t.Signature is
// ignored. The token's ID, client and times are the caller's: Sign makes no choice for it.
func Sign(t Token, key ed25519.PrivateKey) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("token: sign: private key must be 64 bytes (seed and public key)")
	}
	if t.Version == "" {
		t.Version = Version
	}
	if t.Issuer == "" {
		t.Issuer = Issuer
	}
	if err := Validate(t); err != nil {
		return "", err
	}
	msg, err := t.canonical(false)
	if err != nil {
		return "", err
	}
	t.Signature = manifest.FormatSignature(ed25519.Sign(key, signedMessage(t.Version, msg)))
	whole, err := t.canonical(true)
	if err != nil {
		return "", err
	}
	if len(WirePrefix)+b64.EncodedLen(len(whole)) > MaxWireBytes {
		return "", invalid("token", "wire form longer than MaxWireBytes")
	}
	return WirePrefix + b64.EncodeToString(whole), nil
}

// Parse reads a wire form strictly without checking its signature: the prefix, canonical
// unpadded base64url, strict JSON (no duplicate members, nothing but the token), no unknown
// member, every member of its type, the JSON in its one canonical form, token_id, version,
// issuer and signature well formed. Use Verifier.Verify to also check the signature. Every
// failure wraps ErrMalformed and names the rule, never the text.
func Parse(wire string) (Token, error) {
	t, _, err := parse(wire)
	return t, err
}

// parse returns the token and the canonical form it is signed over.
func parse(wire string) (Token, []byte, error) {
	if len(wire) > MaxWireBytes {
		return Token{}, nil, malformed("longer than MaxWireBytes")
	}
	enc, ok := strings.CutPrefix(wire, WirePrefix)
	if !ok {
		return Token{}, nil, malformed("must start with " + WirePrefix)
	}
	payload, err := b64.DecodeString(enc)
	if err != nil || b64.EncodeToString(payload) != enc {
		return Token{}, nil, malformed("not canonical unpadded base64url")
	}
	v, err := jcs.Parse(payload, &jcs.Options{ExactNumbers: true, MaxDepth: maxJSONDepth, MaxBytes: MaxWireBytes})
	if err != nil {
		return Token{}, nil, malformed("not strict JSON")
	}
	t, err := decode(v)
	if err != nil {
		return Token{}, nil, err
	}
	whole, err := t.canonical(true)
	if err != nil {
		return Token{}, nil, err
	}
	if !bytes.Equal(whole, payload) {
		return Token{}, nil, malformed("JSON is not in its canonical form")
	}
	switch {
	case !validID(t.ID):
		return Token{}, nil, malformed("token_id: must be " + IDPrefix + " and 32 lowercase hex digits")
	case t.Version != Version && t.Version != LegacyVersion:
		return Token{}, nil, malformed("version: unsupported")
	case t.Issuer != Issuer:
		return Token{}, nil, malformed("issuer: not " + Issuer)
	}
	if _, err := manifest.ParseSignature(t.Signature); err != nil {
		return Token{}, nil, malformed("signature: must be ed25519: and padded base64 of 64 bytes")
	}
	msg, err := t.canonical(false)
	if err != nil {
		return Token{}, nil, err
	}
	return t, msg, nil
}

// verifySignature reports whether t's signature is pub's over its canonical form msg, as
// its version signs it.
func verifySignature(pub ed25519.PublicKey, t Token, msg []byte) bool {
	sig, err := manifest.ParseSignature(t.Signature)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(pub, signedMessage(t.Version, msg), sig)
}

// signedMessage is what a token's signature covers: SigningContext and the canonical form,
// or the canonical form alone for a LegacyVersion token.
func signedMessage(version string, canonical []byte) []byte {
	if version == LegacyVersion {
		return canonical
	}
	return append([]byte(SigningContext), canonical...)
}
