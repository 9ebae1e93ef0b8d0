package operator

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Client keys and ids are minted here, where clients are added, and nowhere else: the
// command line's client add, the benchmark's client and any front that adds one call
// NewClientKey and NewClientID. An agent is given its key; the public client never makes one.

// Sizes of what is minted.
const (
	// clientKeyBytes is the randomness of a client key: 256 bits, which no one guesses.
	clientKeyBytes = 32
	// clientIDBytes is the randomness of a client id: 72 bits, to keep ids apart, not secret.
	clientIDBytes = 9
)

// ClientKeyPrefix starts every client key, so that one is recognised where it leaks (a log, a
// paste) and scanners can find it.
const ClientKeyPrefix = "cgk_"

// NewClientKey mints a client key, ClientKeyPrefix and the unpadded base64url of 32 random
// bytes, and returns it with its KeyHash, which is all the store keeps. It fails only when
// the system's randomness does.
func NewClientKey() (key, hash string, err error) {
	var raw [clientKeyBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("operator: a client key: %w", err)
	}
	key = ClientKeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	return key, KeyHash(key), nil
}

// NewClientID mints a client id: "cl_" and the unpadded base64url of 9 random bytes.
func NewClientID() (string, error) {
	var raw [clientIDBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("operator: a client id: %w", err)
	}
	return "cl_" + base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// KeyHash is how a client key is known to the store: "sha256:" and the hex of its SHA-256.
// A key is 256 random bits, so a fast hash is enough: there is nothing to guess.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:])
}
