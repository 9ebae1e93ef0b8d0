package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSeed is a recognisable seed, so a test can tell if it leaks into an
// error message in any common encoding.
var testSeed = bytes.Repeat([]byte{0xA5, 0x5A, 0xC3, 0x3C}, 8)

func testKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(testSeed) }

// keyFromByte returns a distinct, deterministic key for each b.
func keyFromByte(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

// writeFile writes data at path with exactly mode, creating folders.
func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // undo the umask
		t.Fatal(err)
	}
}

// checkErrorText fails if err does not name path or if it shows any of the
// secret byte strings raw, in hex or in base64.
func checkErrorText(t *testing.T, err error, path string, secrets ...[]byte) {
	t.Helper()
	msg := err.Error()
	if path != "" && !strings.Contains(msg, path) {
		t.Errorf("error %q does not name the file %s", msg, path)
	}
	for _, s := range secrets {
		if len(s) < 4 {
			continue
		}
		for _, enc := range []string{
			string(s),
			hex.EncodeToString(s),
			strings.ToUpper(hex.EncodeToString(s)),
			base64.StdEncoding.EncodeToString(s),
			base64.RawStdEncoding.EncodeToString(s),
		} {
			if strings.Contains(msg, enc) {
				t.Errorf("error %q shows key bytes or file contents", msg)
			}
		}
	}
}

// listDir returns the names in dir, to catch leftover temporary files.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// mkfifo is syscall.Mkfifo where the system has FIFOs (set in
// umask_unix_test.go), else nil.
var mkfifo func(path string, mode uint32) error
