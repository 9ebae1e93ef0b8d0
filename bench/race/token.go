package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/macaroon.v2"

	"github.com/capgate/capgate/internal/token"
)

// biscuitUnavailable is why the race has no biscuit row: neither Go module of biscuit is
// served by the module proxy this program was written against.
const biscuitUnavailable = "not available here: github.com/biscuit-auth/biscuit-go and its successor under eclipse-biscuit are not served by the Go module proxy this race was built with"

// The grant every token of the race carries: one client, one permission, an hour.
const (
	tokenClient     = "cl_race"
	tokenPermission = "system.settings.read"
)

// newToken signs a capgate token for the grant.
func newToken(key ed25519.PrivateKey, now time.Time) (string, error) {
	return token.Sign(token.Token{ID: token.NewID(), IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(),
		Capabilities: []string{tokenPermission}, AuditTag: "race", ClientID: tokenClient}, key)
}

// checkGrant is what a caller of capgate's Verifier checks besides the signature (the
// broker does it on every call): the client, the permission, the time. The macaroon's
// caveats check the same three.
func checkGrant(t token.Token, now int64) error {
	if t.ClientID != tokenClient || !slices.Contains(t.Capabilities, tokenPermission) || now >= t.ExpiresAt {
		return errors.New("the token does not grant the call")
	}
	return nil
}

// capgateVerify is capgate's token verification from the wire form (token.Verifier.Verify:
// the strict parse of the canonical JSON and one Ed25519 signature check), with the grant
// checked. cached is a Verifier that has seen the token (an agent calling again with it);
// uncached alternates two tokens through a Verifier that keeps one, so every call is a
// miss: the parse and the signature each time.
func capgateVerify() (uncached, cached, floor func() error, err error) {
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	var wires [2]string
	for i := range wires {
		if wires[i], err = newToken(key, now); err != nil {
			return nil, nil, nil, err
		}
	}
	verify := func(v *token.Verifier, wire string) error {
		t, err := v.Verify(wire)
		if err != nil {
			return err
		}
		return checkGrant(t, time.Now().Unix())
	}
	miss, hit := token.NewVerifier(pub, 1), token.NewVerifier(pub, 16)
	i := 0
	uncached = func() error {
		i++
		return verify(miss, wires[i%2])
	}
	cached = func() error { return verify(hit, wires[0]) }
	// A forged token (its signature from another key) must be refused.
	_, other, _ := ed25519.GenerateKey(nil)
	forged, err := newToken(other, now)
	if err != nil {
		return nil, nil, nil, err
	}
	if verify(miss, forged) == nil {
		return nil, nil, nil, errors.New("capgate accepted a forged token")
	}
	// The floor: one ed25519.Verify over bytes of the token's size, no parse.
	msg := []byte(wires[0])
	sig := ed25519.Sign(key, msg)
	floor = func() error {
		if !ed25519.Verify(pub, msg, sig) {
			return errors.New("the floor's signature did not verify")
		}
		return nil
	}
	return uncached, cached, floor, nil
}

// macaroonVerify is a macaroon (gopkg.in/macaroon.v2) carrying the same grant as three
// first-party caveats, verified from its wire form as a service receives it: base64url
// decoded, unmarshalled (binary, version 2), its HMAC chain checked with the root key, and
// every caveat checked by a function that reads it.
func macaroonVerify() (func() error, error) {
	root := make([]byte, 32)
	if _, err := rand.Read(root); err != nil {
		return nil, err
	}
	m, err := macaroon.New(root, []byte(token.NewID()), "capgate", macaroon.V2)
	if err != nil {
		return nil, err
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, c := range []string{"client_id = " + tokenClient, "permission = " + tokenPermission, "expires < " + strconv.FormatInt(exp, 10)} {
		if err := m.AddFirstPartyCaveat([]byte(c)); err != nil {
			return nil, err
		}
	}
	bin, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	wire := base64.RawURLEncoding.EncodeToString(bin)
	check := func(caveat string) error {
		k, v, ok := strings.Cut(caveat, " ")
		if !ok {
			return errors.New("unknown caveat")
		}
		switch k {
		case "client_id":
			if v != "= "+tokenClient {
				return errors.New("another client")
			}
		case "permission":
			if v != "= "+tokenPermission {
				return errors.New("another permission")
			}
		case "expires":
			n, err := strconv.ParseInt(strings.TrimPrefix(v, "< "), 10, 64)
			if err != nil || time.Now().Unix() >= n {
				return errors.New("expired")
			}
		default:
			return errors.New("unknown caveat")
		}
		return nil
	}
	verify := func(wire string, key []byte) error {
		b, err := base64.RawURLEncoding.DecodeString(wire)
		if err != nil {
			return err
		}
		var mm macaroon.Macaroon
		if err := mm.UnmarshalBinary(b); err != nil {
			return err
		}
		return mm.Verify(key, check, nil)
	}
	if err := verify(wire, []byte("another root key of 32 bytes...")); err == nil {
		return nil, errors.New("the macaroon verified under another root key")
	}
	if err := verify(wire, root); err != nil {
		return nil, fmt.Errorf("macaroon: %w", err)
	}
	return func() error { return verify(wire, root) }, nil
}
