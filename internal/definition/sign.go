package definition

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// KeySource gives the public keys trusted for a namespace (Namespace of a name), such as
// keys.TrustStore, whose Keys takes the namespace as an app id.
type KeySource interface {
	Keys(namespace string) ([]ed25519.PublicKey, error)
}

// Errors of Verify.
var (
	ErrUnsigned     = errors.New("definition: unsigned")
	ErrNoKey        = errors.New("definition: no key is trusted for its namespace")
	ErrBadSignature = errors.New("definition: the signature does not verify")
)

// Sign signs the definition's canonical form with key and returns the signed file as indented
// JSON: the document as received, with its signature member set (replaced where present,
// else added last). Sign does not validate; sign what Parse accepts without problems.
func Sign(def *Definition, key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("definition: sign: private key must be 64 bytes (seed and public key)")
	}
	sig := jcs.Value{Kind: jcs.String, Str: manifest.FormatSignature(ed25519.Sign(key, def.canonical))}
	root := def.root
	root.Members = make([]jcs.Member, 0, len(def.root.Members)+1)
	replaced := false
	for _, m := range def.root.Members {
		if m.Name == "signature" {
			m.Value, replaced = sig, true
		}
		root.Members = append(root.Members, m)
	}
	if !replaced {
		root.Members = append(root.Members, jcs.Member{Name: "signature", Value: sig})
	}
	return append(root.AppendIndent(nil), '\n'), nil
}

// Verify checks the definition's signature against the keys ks trusts for its namespace: nil
// when one of them verifies it.
func Verify(def *Definition, ks KeySource) error {
	if def.Signature == "" {
		return ErrUnsigned
	}
	sig, err := manifest.ParseSignature(def.Signature)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	pubs, err := ks.Keys(def.Namespace())
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrNoKey, def.Namespace(), err)
	}
	if len(pubs) == 0 {
		return fmt.Errorf("%w %s", ErrNoKey, def.Namespace())
	}
	for _, pub := range pubs {
		if ed25519.Verify(pub, def.canonical, sig) {
			return nil
		}
	}
	return ErrBadSignature
}
