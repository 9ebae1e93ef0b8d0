package keys

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Generate returns a new Ed25519 private key drawn from crypto/rand.
func Generate() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, fmt.Errorf("keys: generate: %w", err)
	}
	return priv, nil
}

// DefaultPrivateKeyPath returns where a developer's private key for appID
// lives by default, ~/.config/portal-{app_id}/ed25519.key, with the home
// folder from os.UserHomeDir. It is the literal path of the specification, not
// $XDG_CONFIG_HOME, so tools that follow the specification find the same file.
// An invalid app id returns ErrInvalidAppID; a missing home folder returns
// the error of os.UserHomeDir.
func DefaultPrivateKeyPath(appID string) (string, error) {
	if !ValidAppID(appID) {
		return "", fmt.Errorf("keys: default private key path: app id: %w", ErrInvalidAppID)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("keys: default private key path: %w", err)
	}
	return filepath.Join(home, ".config", "portal-"+appID, "ed25519.key"), nil
}

// WritePrivateKey stores the 32-byte seed of key at path with mode 0600.
//
// A missing folder is created with mode 0700 (set explicitly, so the umask
// cannot widen or narrow it); an existing folder is left as it is. The write
// is atomic: the seed goes to a temporary file in the same folder, which is
// synced and then moved into place, and the folder is synced, so a crash
// leaves either no file or the whole key, never half of one.
//
// An existing file at path is never replaced unless overwrite is true; the
// refusal wraps ErrExists. Losing a private key loses the ability to sign
// for the app, so replacing one must be asked for. A key that is not 64
// bytes, or whose public half does not match its seed, wraps ErrMalformedKey.
func WritePrivateKey(path string, key ed25519.PrivateKey, overwrite bool) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("keys: write private key %s: key is %d bytes, want %d: %w",
			path, len(key), ed25519.PrivateKeySize, ErrMalformedKey)
	}
	seed := key.Seed()
	defer clear(seed)
	// A PrivateKey is seed||public. Only the seed is stored, so a key whose
	// halves disagree would load as a different key than the caller holds.
	derived := ed25519.NewKeyFromSeed(seed)
	defer clear(derived)
	if !derived.Equal(key) {
		return fmt.Errorf("keys: write private key %s: public half does not match the seed: %w",
			path, ErrMalformedKey)
	}
	return writeKeyFile(path, seed, 0o600, 0o700, overwrite)
}

// LoadPrivateKey reads a private key file: exactly 32 raw bytes, the Ed25519
// seed.
//
// It refuses, before reading a byte:
//   - a symlink (ErrNotRegularFile): whoever can change the link can swap the
//     key, and the mode check below would be about the wrong file;
//   - any other non-regular file (ErrNotRegularFile);
//   - a file that group or others may read or write, mode & 0o077 != 0
//     (ErrInsecurePermissions): a key others can read is no longer secret, one
//     others can write is no longer the developer's. Fix with chmod 600.
//     Windows file modes do not reflect ACLs, so this check is skipped there.
//
// and, after reading, anything but 32 bytes (ErrMalformedKey). Only the last
// path element is checked for a symlink; folders above it may be links.
// Errors name the path and the rule, never the key bytes.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	if err := checkPrivateKeyFile(path, lfi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keys: load private key: %w", err)
	}
	// The file opened must be the one whose mode was checked: a swap between
	// Lstat and Open (say, to a symlink) would otherwise slip past the checks.
	if !os.SameFile(lfi, fi) {
		return nil, &FileError{Path: path, Rule: "file was replaced while it was being loaded", Err: ErrNotRegularFile}
	}
	if err := checkPrivateKeyFile(path, fi); err != nil {
		return nil, err
	}
	// Read one byte more than a seed so a file that grew after Stat is caught.
	buf := make([]byte, ed25519.SeedSize+1)
	defer clear(buf)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("keys: load private key: read %s: %w", path, err)
	}
	if n != ed25519.SeedSize {
		return nil, wrongPrivateKeySize(path, int64(n))
	}
	return ed25519.NewKeyFromSeed(buf[:ed25519.SeedSize]), nil
}

// checkPrivateKeyFile applies the rules that need only the file's metadata.
func checkPrivateKeyFile(path string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if mode&fs.ModeSymlink != 0 {
		return &FileError{Path: path, Rule: "a private key file must not be a symlink; point the path at the file itself", Err: ErrNotRegularFile}
	}
	if !mode.IsRegular() {
		return &FileError{Path: path, Rule: "a private key must be a regular file", Err: ErrNotRegularFile}
	}
	if runtime.GOOS != "windows" && mode.Perm()&0o077 != 0 {
		return &FileError{
			Path: path,
			Rule: fmt.Sprintf("mode %#o lets group or others read or write a private key; want 0600 (chmod 600)", mode.Perm()),
			Err:  ErrInsecurePermissions,
		}
	}
	if fi.Size() != ed25519.SeedSize {
		return wrongPrivateKeySize(path, fi.Size())
	}
	return nil
}

func wrongPrivateKeySize(path string, n int64) error {
	return &FileError{
		Path: path,
		Rule: fmt.Sprintf("a private key file must hold exactly %d raw bytes, found %d", ed25519.SeedSize, n),
		Err:  ErrMalformedKey,
	}
}
