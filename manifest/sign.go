package manifest

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/capgate/capgate/internal/jcs"
)

// SignaturePrefix starts every signature's text.
const SignaturePrefix = "ed25519:"

// ErrMalformedSignature is returned by ParseSignature for any text that is not "ed25519:"
// followed by the standard, padded base64 of exactly 64 bytes, written the one way that
// encoding writes it.
var ErrMalformedSignature = errors.New("malformed signature")

// ParseSignature returns the 64 signature bytes of a signature's text. Unpadded, URL-safe,
// wrapped or otherwise re-spelled base64 is refused: a signature has one spelling.
func ParseSignature(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SignaturePrefix)
	if !ok {
		return nil, fmt.Errorf("%w: must start with %q", ErrMalformedSignature, SignaturePrefix)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(sig) != ed25519.SignatureSize || base64.StdEncoding.EncodeToString(sig) != b64 {
		return nil, fmt.Errorf("%w: must be standard padded base64 of %d bytes", ErrMalformedSignature, ed25519.SignatureSize)
	}
	return sig, nil
}

// FormatSignature returns the text of a signature: "ed25519:" and its standard padded base64.
func FormatSignature(sig []byte) string {
	return SignaturePrefix + base64.StdEncoding.EncodeToString(sig)
}

// Sign signs the document's canonical form with key and returns the signed document as
// indented JSON: the document as received, members in received order and numbers as written,
// with its signature member set (replaced where present, else added last). Sign does not
// validate; sign what Validate accepts.
func Sign(doc *Document, key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("manifest: sign: private key must be 64 bytes (seed and public key)")
	}
	sig := FormatSignature(ed25519.Sign(key, doc.canonical))
	root := doc.root
	root.Members = make([]jcs.Member, 0, len(doc.root.Members)+1)
	replaced := false
	for _, m := range doc.root.Members {
		if m.Name == "signature" {
			m.Value = jcs.Value{Kind: jcs.String, Str: sig}
			replaced = true
		}
		root.Members = append(root.Members, m)
	}
	if !replaced {
		root.Members = append(root.Members, jcs.Member{Name: "signature", Value: jcs.Value{Kind: jcs.String, Str: sig}})
	}
	return append(root.AppendIndent(nil), '\n'), nil
}
