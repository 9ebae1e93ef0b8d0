//go:build unix

package keys

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func init() { mkfifo = syscall.Mkfifo }

// TestWriteModesIgnoreUmask checks that the promised modes hold under a
// strict and a loose umask. The umask is process-wide, so this test must not
// run in parallel with others.
func TestWriteModesIgnoreUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o000} {
		old := syscall.Umask(mask)
		t.Cleanup(func() { syscall.Umask(old) })

		root := t.TempDir()
		privDir := filepath.Join(root, "portal-org.example.notes")
		pubDir := filepath.Join(root, "trusted")
		if err := WritePrivateKey(filepath.Join(privDir, "ed25519.key"), testKey(), false); err != nil {
			t.Fatal(err)
		}
		if err := WritePublicKey(filepath.Join(pubDir, app+".pub"), oldKey, false); err != nil {
			t.Fatal(err)
		}
		syscall.Umask(old)

		for path, want := range map[string]os.FileMode{
			privDir:                               0o700 | os.ModeDir,
			filepath.Join(privDir, "ed25519.key"): 0o600,
			pubDir:                                0o755 | os.ModeDir,
			filepath.Join(pubDir, app+".pub"):     0o644,
		} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != want {
				t.Errorf("umask %#o: %s has mode %v, want %v", mask, path, fi.Mode(), want)
			}
		}
	}
}
