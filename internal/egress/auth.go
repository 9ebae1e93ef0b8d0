package egress

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Every request a client sends the proxy carries its call's proxy credential, in the one form
// HTTP clients send for a proxy URL with userinfo (http://capgate:CRED@proxy:port), which
// Go's net/http, curl, Python's requests and Node's proxy agents all support:
//
//	Proxy-Authorization: Basic base64("capgate:" + CRED)
//
// The user name is always ProxyUser; the password is the credential Open returned. The scheme
// name is read without regard to case (RFC 9110 11.1); everything else is exact: standard
// base64 with padding, one space after the scheme, one header. A credential is a random
// 256-bit value, so guessing one is hopeless, and the proxy keeps only its SHA-256, so a
// look-up's timing says nothing about the credentials it holds.

// ProxyUser is the user name of every proxy credential.
const ProxyUser = "capgate"

const (
	// credPrefix and handlePrefix tell a proxy credential from a credential handle at a
	// glance (in a provider's own debugging, say); both are followed by 43 characters of
	// unpadded base64url, 256 random bits.
	credPrefix   = "cgp_"
	handlePrefix = "cgh_"
	tokenChars   = 43
)

// ProxyAuthorization returns the Proxy-Authorization header value that carries cred, for
// clients that set the header themselves rather than through a proxy URL.
func ProxyAuthorization(cred string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(ProxyUser+":"+cred))
}

// newToken returns a fresh random token with the given prefix and its digest.
func newToken(prefix string) (string, [32]byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand.Read does not fail on Linux (Go 1.24 and later)
	}
	t := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return t, sha256.Sum256([]byte(t))
}

// wellFormedToken reports whether t has the shape newToken gives with prefix.
func wellFormedToken(t, prefix string) bool {
	if len(t) != len(prefix)+tokenChars || !strings.HasPrefix(t, prefix) {
		return false
	}
	for i := len(prefix); i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// parseProxyAuthorization returns the credential a Proxy-Authorization header value carries,
// or false when the value is not exactly the form above.
func parseProxyAuthorization(v string) (string, bool) {
	const scheme = "basic "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	enc := v[len(scheme):]
	// The encoded form of "capgate:" and a credential has a fixed length; anything longer is
	// not one, and is not decoded.
	if len(enc) != base64.StdEncoding.EncodedLen(len(ProxyUser)+1+len(credPrefix)+tokenChars) {
		return "", false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return "", false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user != ProxyUser || !wellFormedToken(pass, credPrefix) {
		return "", false
	}
	return pass, true
}
