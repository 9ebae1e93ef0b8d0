package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/manifest"
)

// manifestCaps is the size of the race's manifest, as `capgate bench manifest` measures it.
const manifestCaps = 100

// staticKeys is a KeySource of one key, so that no file system time is measured.
type staticKeys struct{ k ed25519.PublicKey }

func (s staticKeys) Keys(string) ([]ed25519.PublicKey, error) { return []ed25519.PublicKey{s.k}, nil }

// manifestVerify loads and verifies the signed 100-capability manifest of internal/bench
// (manifest.VerifyBytes: the strict parse, the model and its static rules, RFC 8785, every
// schema compiled, Ed25519): warm finds the schemas in the process's compiled-schema cache,
// as a gateway re-verifying a manifest does; cold compiles every one. floor is the least
// any verifier of a signed JSON document does: encoding/json decoding the same bytes and
// one ed25519.Verify.
func manifestVerify() (warm, cold, floor func() error, err error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, nil, nil, err
	}
	data, err := bench.SignedManifest(manifestCaps, priv)
	if err != nil {
		return nil, nil, nil, err
	}
	keys := staticKeys{pub}
	load := func() error {
		if v := manifest.VerifyBytes(data, keys); !v.Trusted() {
			return fmt.Errorf("the manifest did not verify: %s %s", v.Reason, v.Detail)
		}
		return nil
	}
	warm = load
	cold = func() error {
		manifest.ResetSchemaCache()
		return load()
	}
	// A manifest changed after signing must not verify.
	tampered := append([]byte(nil), data...)
	tampered[len(tampered)/2] ^= 1
	if manifest.VerifyBytes(tampered, keys).Trusted() {
		return nil, nil, nil, errors.New("a tampered manifest verified")
	}
	sig := ed25519.Sign(priv, data)
	floor = func() error {
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			return err
		}
		if !ed25519.Verify(pub, data, sig) {
			return errors.New("the floor's signature did not verify")
		}
		return nil
	}
	return warm, cold, floor, nil
}
