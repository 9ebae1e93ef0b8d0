package token

import (
	"container/list"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Verifier checks wire forms against capgate's public key and remembers the tokens it has
// verified, so that an agent calling many times with one token costs one signature check.
// The cache is keyed by the whole wire form: any other string, however it differs, has
// another key and is parsed and verified afresh. (Keying by the string itself, not a digest
// of it, spares hashing the token on every call; the cache holds only tokens capgate signed,
// at most cacheSize of them.) It holds only tokens whose
// signature verified, and it answers only whether the signature verified: time, client,
// uses and revocation are checked on every call by the caller.
//
// A Verifier is safe for concurrent use. The zero Verifier is not usable; use NewVerifier.
type Verifier struct {
	pub ed25519.PublicKey

	mu    sync.Mutex
	size  int
	order *list.List // of *entry, most recently used first
	index map[string]*list.Element

	sigChecks atomic.Int64 // signature checks done, for tests
}

type entry struct {
	key string
	tok Token
	sum Digest // WireDigest(key), computed once
}

// NewVerifier returns a Verifier for pub keeping up to cacheSize verified tokens; zero or less
// means DefaultCacheSize, and more than MaxCacheSize means MaxCacheSize. A pub that is not
// 32 bytes makes every Verify fail with ErrBadSignature.
func NewVerifier(pub ed25519.PublicKey, cacheSize int) *Verifier {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	cacheSize = min(cacheSize, MaxCacheSize)
	return &Verifier{
		pub:   slices.Clone(pub),
		size:  cacheSize,
		order: list.New(),
		index: make(map[string]*list.Element),
	}
}

// Verify parses wire strictly (see Parse) and checks its signature, and returns the token.
// Errors wrap ErrMalformed or ErrBadSignature. The returned token shares nothing with the
// cache; the caller may change it.
func (v *Verifier) Verify(wire string) (Token, error) {
	var t Token
	_, err := v.VerifyHashed(wire, &t)
	return t.Clone(), err
}

// VerifyHashed is Verify that also returns the wire form's WireDigest, computed once per
// token the cache holds rather than on every call, and that writes the token into *t rather
// than returning it (a token is a few hundred bytes, and this is every call's path). The
// token it writes shares its lists with the cache's copy, which is never changed: the caller
// reads them and must not write to them (Verify returns a copy of its own). On an error *t is
// the zero Token.
func (v *Verifier) VerifyHashed(wire string, t *Token) (Digest, error) {
	*t = Token{}
	if len(wire) > MaxWireBytes {
		return Digest{}, malformed("longer than MaxWireBytes")
	}
	key := wire
	v.mu.Lock()
	if el, ok := v.index[key]; ok {
		v.order.MoveToFront(el)
		e := el.Value.(*entry)
		*t = e.tok
		sum := e.sum
		v.mu.Unlock()
		return sum, nil
	}
	v.mu.Unlock()

	parsed, msg, err := parse(wire)
	if err != nil {
		return Digest{}, err
	}
	v.sigChecks.Add(1)
	if !verifySignature(v.pub, parsed, msg) {
		return Digest{}, ErrBadSignature
	}
	sum := WireDigest(wire)

	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.index[key]; !ok {
		v.index[key] = v.order.PushFront(&entry{key: key, tok: parsed.Clone(), sum: sum})
		for v.order.Len() > v.size {
			last := v.order.Back()
			v.order.Remove(last)
			delete(v.index, last.Value.(*entry).key)
		}
	}
	*t = parsed
	return sum, nil
}

// Digest is the SHA-256 of a token's wire form.
type Digest [sha256.Size]byte

// WireDigest is the SHA-256 of a token's wire form: WireHash's, as bytes.
func WireDigest(wire string) Digest { return sha256.Sum256([]byte(wire)) }

// String is the digest as WireHash writes it.
func (d Digest) String() string { return wireHashPrefix + hex.EncodeToString(d[:]) }

// ParseWireHash reads a WireHash back into its digest; it reports false for any other text
// (another algorithm, uppercase or short hex).
func ParseWireHash(h string) (Digest, bool) {
	var d Digest
	hexPart, ok := strings.CutPrefix(h, wireHashPrefix)
	if !ok || len(hexPart) != 2*len(d) {
		return Digest{}, false
	}
	if _, err := hex.Decode(d[:], []byte(hexPart)); err != nil || d.String() != h {
		return Digest{}, false
	}
	return d, true
}

const wireHashPrefix = "sha256:"

// WireHash is the hash under which a token's wire form is known: "sha256:" and the lowercase
// hex of its SHA-256. The store keeps it, never the token.
func WireHash(wire string) string { return WireDigest(wire).String() }
