package keys

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultTrustedDir is the trusted-keys folder of the specification.
const DefaultTrustedDir = "/etc/portal/keys/trusted"

// TrustStore reads the public keys trusted to sign each app's manifest from a
// folder laid out as
//
//	{Dir}/{app_id}.pub         the app's key
//	{Dir}/{app_id}.d/*.pub     more keys, for a rotation overlap
//
// The zero value reads DefaultTrustedDir. A TrustStore holds no state and
// reads the folder on every call, so adding or removing a file takes effect
// at once; it is safe for concurrent use.
type TrustStore struct {
	// Dir is the trusted-keys folder; "" means DefaultTrustedDir.
	Dir string
}

func (s TrustStore) dir() string {
	if s.Dir == "" {
		return DefaultTrustedDir
	}
	return s.Dir
}

// KeyPath returns {Dir}/{app_id}.pub, the file that holds appID's trusted
// key, or ErrInvalidAppID.
func (s TrustStore) KeyPath(appID string) (string, error) {
	if !ValidAppID(appID) {
		return "", fmt.Errorf("keys: trusted key path: app id: %w", ErrInvalidAppID)
	}
	return filepath.Join(s.dir(), appID+".pub"), nil
}

// RotationDir returns {Dir}/{app_id}.d, the folder of appID's additional
// trusted keys, or ErrInvalidAppID.
func (s TrustStore) RotationDir(appID string) (string, error) {
	if !ValidAppID(appID) {
		return "", fmt.Errorf("keys: trusted key path: app id: %w", ErrInvalidAppID)
	}
	return filepath.Join(s.dir(), appID+".d"), nil
}

// Keys returns every key trusted to sign appID's manifest: {app_id}.pub
// first, then each {app_id}.d/*.pub in file name order, with duplicates
// dropped. A manifest verifies if any of them verifies it. Names starting
// with "." are skipped, so editor backups and half-written files never
// count.
//
// The app id is checked with ValidAppID before any path is built
// (ErrInvalidAppID). With no key at all the error wraps ErrNoTrustedKey and
// names {app_id}.pub. If any key file is malformed, not a regular file,
// writable by others (ErrInsecurePermissions) or unreadable, or the .d folder
// holds more than 32 keys (ErrTooManyKeys), Keys returns no keys and an error
// naming every such file: a broken trust folder is an operator's mistake to
// show, not to work around, and the caller treats the app as unverified and
// says why.
func (s TrustStore) Keys(appID string) ([]ed25519.PublicKey, error) {
	if !ValidAppID(appID) {
		return nil, fmt.Errorf("keys: trusted keys: app id: %w", ErrInvalidAppID)
	}
	mainPath := filepath.Join(s.dir(), appID+".pub")
	rotDir := filepath.Join(s.dir(), appID+".d")

	var found []ed25519.PublicKey
	var problems []error
	add := func(path string) {
		pub, err := loadPublicKey(path, true)
		switch {
		case err == nil:
			if !slices.ContainsFunc(found, func(k ed25519.PublicKey) bool { return k.Equal(pub) }) {
				found = append(found, pub)
			}
		case errIsNotExist(err):
			// No file, no trust. For a .d entry this is a file removed
			// between listing and reading, which ends its trust.
		default:
			problems = append(problems, err)
		}
	}

	add(mainPath)

	entries, err := os.ReadDir(rotDir)
	switch {
	case err == nil:
		var names []string
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".pub") {
				continue
			}
			names = append(names, name)
		}
		if len(names) > maxRotationKeys {
			problems = append(problems, &FileError{
				Path: rotDir,
				Rule: fmt.Sprintf("holds %d .pub files; at most %d are read", len(names), maxRotationKeys),
				Err:  ErrTooManyKeys,
			})
			break
		}
		// os.ReadDir sorts by name, so the order is stable.
		for _, name := range names {
			add(filepath.Join(rotDir, name))
		}
	case errIsNotExist(err):
	default:
		problems = append(problems, fmt.Errorf("keys: trusted keys: %w", err))
	}

	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if len(found) == 0 {
		return nil, &FileError{
			Path: mainPath,
			Rule: "no trusted key: the file is missing and " + rotDir + " holds no *.pub file",
			Err:  ErrNoTrustedKey,
		}
	}
	return found, nil
}
