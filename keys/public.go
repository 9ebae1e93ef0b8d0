package keys

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// base64KeyLen is the length of the padded standard base64 of a public key.
var base64KeyLen = base64.StdEncoding.EncodedLen(ed25519.PublicKeySize) // 44

// ParsePublicKey decodes a public key in one of the two accepted encodings:
//
//   - exactly 32 bytes: the raw key. Raw wins at this length, even when the
//     bytes happen to be valid base64 text (of 24 bytes);
//   - 44 characters of standard padded base64 (RFC 4648 section 4, with
//     canonical padding bits) of 32 bytes, optionally followed by trailing
//     spaces, tabs, CRs and LFs, as editors and `echo` leave them.
//
// Anything else, including a nil or empty slice, wraps ErrMalformedKey. The
// error says which rule failed, never the bytes. The result is a new slice;
// b is not retained.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	pub, rule := parsePublicKey(b)
	if rule != "" {
		return nil, fmt.Errorf("keys: public key: %s: %w", rule, ErrMalformedKey)
	}
	return pub, nil
}

// parsePublicKey returns the key, or "" and the rule that b breaks.
func parsePublicKey(b []byte) (ed25519.PublicKey, string) {
	if len(b) == ed25519.PublicKeySize {
		return ed25519.PublicKey(bytes.Clone(b)), ""
	}
	text := bytes.TrimRight(b, " \t\r\n")
	if len(text) != base64KeyLen {
		return nil, fmt.Sprintf("%d bytes; want %d raw bytes or %d characters of base64",
			len(b), ed25519.PublicKeySize, base64KeyLen)
	}
	// Go's base64 decoder skips CR and LF anywhere in its input; a key file
	// must not, so check the alphabet first.
	for _, c := range text {
		if !isBase64Char(c) {
			return nil, "not standard base64 (RFC 4648 alphabet with padding)"
		}
	}
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Strict().Decode(buf, text)
	if err != nil {
		return nil, "not standard base64 (RFC 4648 alphabet with canonical padding)"
	}
	if n != ed25519.PublicKeySize {
		return nil, fmt.Sprintf("base64 decodes to %d bytes; want %d", n, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(buf[:n:n]), ""
}

func isBase64Char(c byte) bool {
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z') || c == '+' || c == '/' || c == '='
}

// LoadPublicKey reads a public key file in either encoding ParsePublicKey
// accepts. Symlinks are followed: public keys are not secret, and operators
// link them into place. A file that is not regular (a folder, a FIFO, a
// device) or is larger than 4 KiB is refused with ErrMalformedKey before it is
// read, so a stray path cannot block or exhaust memory. Errors name the path
// and the rule, never the file's contents.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	return loadPublicKey(path, false)
}

// loadPublicKey is LoadPublicKey; trusted adds the trust store's rule that a
// key file others may write cannot be a trust anchor.
func loadPublicKey(path string, trusted bool) (ed25519.PublicKey, error) {
	// Stat before Open: opening a FIFO would block until a writer appears.
	sfi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keys: load public key: %w", err)
	}
	if err := checkPublicKeyFile(path, sfi, trusted); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keys: load public key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keys: load public key: %w", err)
	}
	if !os.SameFile(sfi, fi) {
		return nil, &FileError{Path: path, Rule: "file was replaced while it was being loaded", Err: ErrMalformedKey}
	}
	if err := checkPublicKeyFile(path, fi, trusted); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPublicKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("keys: load public key: read %s: %w", path, err)
	}
	if len(b) > maxPublicKeyFileSize {
		return nil, tooLarge(path)
	}
	pub, rule := parsePublicKey(b)
	if rule != "" {
		return nil, &FileError{Path: path, Rule: "public key file: " + rule, Err: ErrMalformedKey}
	}
	return pub, nil
}

func checkPublicKeyFile(path string, fi fs.FileInfo, trusted bool) error {
	if !fi.Mode().IsRegular() {
		return &FileError{Path: path, Rule: "a public key must be a regular file", Err: ErrMalformedKey}
	}
	if fi.Size() > maxPublicKeyFileSize {
		return tooLarge(path)
	}
	if trusted && runtime.GOOS != "windows" && fi.Mode().Perm()&0o002 != 0 {
		return &FileError{
			Path: path,
			Rule: fmt.Sprintf("mode %#o lets anyone replace a trusted key; want 0644", fi.Mode().Perm()),
			Err:  ErrInsecurePermissions,
		}
	}
	return nil
}

func tooLarge(path string) error {
	return &FileError{
		Path: path,
		Rule: fmt.Sprintf("larger than any public key file (limit %d bytes)", maxPublicKeyFileSize),
		Err:  ErrMalformedKey,
	}
}

// WritePublicKey stores pub as 32 raw bytes at path with mode 0644, by the
// same atomic write as WritePrivateKey. A missing folder is created with mode
// 0755, since public keys are meant to be read by everyone. An existing file
// is replaced only when overwrite is true (else ErrExists); a key that is not
// 32 bytes wraps ErrMalformedKey.
func WritePublicKey(path string, pub ed25519.PublicKey, overwrite bool) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("keys: write public key %s: key is %d bytes, want %d: %w",
			path, len(pub), ed25519.PublicKeySize, ErrMalformedKey)
	}
	return writeKeyFile(path, pub, 0o644, 0o755, overwrite)
}

// Fingerprint returns "sha256:" followed by the full lowercase hex SHA-256 of
// the 32 raw key bytes (71 characters in all), a stable name for a key to show
// people and write to logs. The full hash is kept because a fingerprint is
// what a person compares when deciding to trust a key. A nil or wrong-length
// key returns "", so a broken key is never shown as if it had a name.
func Fingerprint(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		return ""
	}
	sum := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// errIsNotExist reports whether err means the file is not there.
func errIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
