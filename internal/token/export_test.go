package token

// SignatureChecks returns how many signatures v has checked, so tests can tell a cached
// answer from a fresh one.
func (v *Verifier) SignatureChecks() int64 { return v.sigChecks.Load() }

// Canonical exposes the signed form for tests that re-encode a token without signing it.
func (t Token) Canonical(withSig bool) ([]byte, error) { return t.canonical(withSig) }
