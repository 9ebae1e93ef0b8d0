package token

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/capgate/capgate/internal/readmap"
)

// Verifier checks wire forms against capgate's public key and remembers the tokens it has
// verified, so that an agent calling many times with one token costs one signature check.
// The cache is keyed by the whole wire form: any other string, however it differs, has
// another key and is parsed and verified afresh. (Keying by the string itself, not a digest
// of it, spares hashing the token on every call.) It holds only tokens whose signature
// verified, at most cacheSize of them, and it answers only whether the signature verified:
// time, client, uses and revocation are checked on every call by the caller.
//
// A Verifier is safe for concurrent use. The zero Verifier is not usable; use NewVerifier.
type Verifier struct {
	pub ed25519.PublicKey

	size  int
	cache readmap.Map[string, entry] // by wire form; a lookup takes no lock

	added     atomic.Uint64 // entries added, their seq
	sigChecks atomic.Int64  // signature checks done, for tests
}

// entry is a verified token. Its fields are set once, but used: a cache over its bound keeps
// three quarters of its bound, first the entries looked up again since the last pruning,
// then the newest of the others (the clock algorithm's second chance, with the newest first
// among those without one), so that the tokens of agents calling stay and one-off ones go,
// without a list every lookup would reorder under a lock.
type entry struct {
	tok  Token
	sum  Digest      // WireDigest(key), computed once
	seq  uint64      // when it was added: higher is newer
	used atomic.Bool // looked up since it was added or since the last pruning
}

// NewVerifier returns a Verifier for pub keeping up to cacheSize verified tokens; zero or less
// means DefaultCacheSize, and more than MaxCacheSize means MaxCacheSize. A pub that is not
// 32 bytes makes every Verify fail with ErrBadSignature.
func NewVerifier(pub ed25519.PublicKey, cacheSize int) *Verifier {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	cacheSize = min(cacheSize, MaxCacheSize)
	return &Verifier{pub: slices.Clone(pub), size: cacheSize}
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
	if e, ok := v.cache.Load(wire); ok {
		if !e.used.Load() { // written only when it changes: lookups share the line
			e.used.Store(true)
		}
		*t = e.tok
		return e.sum, nil
	}

	parsed, msg, err := parse(wire)
	if err != nil {
		return Digest{}, err
	}
	v.sigChecks.Add(1)
	if !verifySignature(v.pub, parsed, msg) {
		return Digest{}, ErrBadSignature
	}
	sum := WireDigest(wire)
	e := &entry{tok: parsed.Clone(), sum: sum, seq: v.added.Add(1)}
	v.cache.Store(wire, e)
	if v.cache.Len() > v.size {
		v.prune()
	}
	*t = parsed
	return sum, nil
}

// prune brings the cache to at most three quarters of its bound: the entries looked up since
// the last pruning first (their mark cleared), then the newest others.
func (v *Verifier) prune() {
	keep := max(v.size*3/4, 1)
	marked := 0
	var others []uint64
	v.cache.Range(func(_ string, e *entry) bool {
		if e.used.Load() {
			marked++
		} else {
			others = append(others, e.seq)
		}
		return true
	})
	keepMarked := min(marked, keep)
	var oldest uint64 // the oldest seq of the others kept; past the newest when none is
	if n := keep - keepMarked; n > 0 && len(others) > 0 {
		slices.Sort(others)
		oldest = others[max(len(others)-n, 0)]
	} else {
		oldest = v.added.Load() + 1
	}
	v.cache.Prune(func(_ string, e *entry) bool {
		if e.used.Load() {
			if keepMarked == 0 {
				return false
			}
			keepMarked--
			e.used.Store(false)
			return true
		}
		return e.seq >= oldest
	})
}

// Digest is the SHA-256 of a token's wire form.
type Digest [sha256.Size]byte

// Equal reports whether d and o are the same digest, in a time that does not depend on where
// they differ: four words compared at once, not crypto/subtle's byte by byte (a sixth of its
// time, on every decision under a token).
func (d *Digest) Equal(o *Digest) bool {
	var v uint64
	for i := 0; i < len(d); i += 8 {
		v |= binary.LittleEndian.Uint64(d[i:]) ^ binary.LittleEndian.Uint64(o[i:])
	}
	return v == 0
}

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
