package keys

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func skipOnWindows(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows file modes do not reflect ACLs")
	}
}

func TestPrivateKeyRoundTrip(t *testing.T) {
	skipOnWindows(t)
	priv, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(priv) != ed25519.PrivateKeySize {
		t.Fatalf("Generate: %d bytes", len(priv))
	}
	dir := filepath.Join(t.TempDir(), "portal-org.example.notes")
	path := filepath.Join(dir, "ed25519.key")
	if err := WritePrivateKey(path, priv, false); err != nil {
		t.Fatal(err)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != 0o600 {
		t.Errorf("key file mode = %v, want -rw-------", got)
	}
	if fi.Size() != ed25519.SeedSize {
		t.Errorf("key file size = %d, want %d", fi.Size(), ed25519.SeedSize)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("key folder mode = %#o, want 0700", got)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, priv.Seed()) {
		t.Error("key file does not hold the raw seed")
	}
	if names := listDir(t, dir); !slices.Equal(names, []string{"ed25519.key"}) {
		t.Errorf("folder holds %q, want only the key (no temporary files)", names)
	}

	loaded, err := LoadPrivateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Equal(priv) {
		t.Fatal("loaded key differs from the written key")
	}

	pubPath := filepath.Join(dir, "ed25519.pub")
	if err := WritePublicKey(pubPath, priv.Public().(ed25519.PublicKey), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(pubPath); err != nil {
		t.Fatal(err)
	} else if got := fi.Mode(); got != 0o644 {
		t.Errorf("public key file mode = %v, want -rw-r--r--", got)
	}
	pub, err := LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("manifest bytes")
	if !ed25519.Verify(pub, msg, ed25519.Sign(loaded, msg)) {
		t.Fatal("signature by the loaded private key does not verify with the loaded public key")
	}
}

func TestWritePublicKeyCreatesReadableFolder(t *testing.T) {
	skipOnWindows(t)
	dir := filepath.Join(t.TempDir(), "trusted")
	if err := WritePublicKey(filepath.Join(dir, "org.example.notes.pub"), testKey().Public().(ed25519.PublicKey), false); err != nil {
		t.Fatal(err)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o755 {
		t.Errorf("public key folder mode = %#o, want 0755", got)
	}
}

func TestWriteNoOverwrite(t *testing.T) {
	first, second := keyFromByte(1), keyFromByte(2)
	tests := []struct {
		name  string
		write func(path string, k ed25519.PrivateKey, overwrite bool) error
		load  func(path string) ([]byte, error)
		want  func(k ed25519.PrivateKey) []byte
	}{
		{
			name:  "private",
			write: WritePrivateKey,
			load: func(p string) ([]byte, error) {
				k, err := LoadPrivateKey(p)
				return k, err
			},
			want: func(k ed25519.PrivateKey) []byte { return k },
		},
		{
			name: "public",
			write: func(p string, k ed25519.PrivateKey, o bool) error {
				return WritePublicKey(p, k.Public().(ed25519.PublicKey), o)
			},
			load: func(p string) ([]byte, error) {
				k, err := LoadPublicKey(p)
				return k, err
			},
			want: func(k ed25519.PrivateKey) []byte { return k.Public().(ed25519.PublicKey) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "key")
			if err := tt.write(path, first, false); err != nil {
				t.Fatal(err)
			}
			err := tt.write(path, second, false)
			if !errors.Is(err, ErrExists) {
				t.Fatalf("second write without overwrite: err = %v, want ErrExists", err)
			}
			checkErrorText(t, err, path, first.Seed(), second.Seed())
			if got, err := tt.load(path); err != nil {
				t.Fatal(err)
			} else if !bytes.Equal(got, tt.want(first)) {
				t.Fatal("refused write changed the file")
			}
			if err := tt.write(path, second, true); err != nil {
				t.Fatalf("write with overwrite: %v", err)
			}
			if got, err := tt.load(path); err != nil {
				t.Fatal(err)
			} else if !bytes.Equal(got, tt.want(second)) {
				t.Fatal("overwrite did not replace the file")
			}
			if names := listDir(t, dir); !slices.Equal(names, []string{"key"}) {
				t.Errorf("folder holds %q, want only the key (no temporary files)", names)
			}
		})
	}
}

func TestWritePrivateKeyRefusesBadKey(t *testing.T) {
	mismatched := slices.Clone(testKey())
	copy(mismatched[32:], keyFromByte(9)[32:])
	tests := []struct {
		name string
		key  ed25519.PrivateKey
	}{
		{"nil", nil},
		{"seed only", testKey().Seed()},
		{"public half does not match seed", mismatched},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ed25519.key")
			err := WritePrivateKey(path, tt.key, false)
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("err = %v, want ErrMalformedKey", err)
			}
			checkErrorText(t, err, path, testSeed)
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Error("a refused key was written")
			}
		})
	}
}

func TestLoadPrivateKey(t *testing.T) {
	seed := testSeed
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error // nil: loads testKey
		unix  bool  // mode rule; skipped on Windows
	}{
		{"0600", func(t *testing.T, p string) { writeFile(t, p, seed, 0o600) }, nil, false},
		{"0400", func(t *testing.T, p string) { writeFile(t, p, seed, 0o400) }, nil, true},
		{"0640", func(t *testing.T, p string) { writeFile(t, p, seed, 0o640) }, ErrInsecurePermissions, true},
		{"0604", func(t *testing.T, p string) { writeFile(t, p, seed, 0o604) }, ErrInsecurePermissions, true},
		{"0660", func(t *testing.T, p string) { writeFile(t, p, seed, 0o660) }, ErrInsecurePermissions, true},
		{"0644", func(t *testing.T, p string) { writeFile(t, p, seed, 0o644) }, ErrInsecurePermissions, true},
		{"0620", func(t *testing.T, p string) { writeFile(t, p, seed, 0o620) }, ErrInsecurePermissions, true},
		{"0602", func(t *testing.T, p string) { writeFile(t, p, seed, 0o602) }, ErrInsecurePermissions, true},
		{"0610", func(t *testing.T, p string) { writeFile(t, p, seed, 0o610) }, ErrInsecurePermissions, true},
		{"empty", func(t *testing.T, p string) { writeFile(t, p, nil, 0o600) }, ErrMalformedKey, false},
		{"31 bytes", func(t *testing.T, p string) { writeFile(t, p, seed[:31], 0o600) }, ErrMalformedKey, false},
		{"33 bytes", func(t *testing.T, p string) { writeFile(t, p, append(slices.Clone(seed), '\n'), 0o600) }, ErrMalformedKey, false},
		{"64 bytes seed and public", func(t *testing.T, p string) { writeFile(t, p, testKey(), 0o600) }, ErrMalformedKey, false},
		{"symlink to a good key", func(t *testing.T, p string) {
			target := filepath.Join(filepath.Dir(p), "real.key")
			writeFile(t, target, seed, 0o600)
			if err := os.Symlink(target, p); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, ErrNotRegularFile, false},
		{"folder", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrNotRegularFile, false},
		{"missing", func(t *testing.T, p string) {}, fs.ErrNotExist, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.unix {
				skipOnWindows(t)
			}
			path := filepath.Join(t.TempDir(), "ed25519.key")
			tt.setup(t, path)
			got, err := LoadPrivateKey(path)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(testKey()) {
					t.Fatal("loaded the wrong key")
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got != nil {
				t.Error("a key was returned with the error")
			}
			checkErrorText(t, err, path, seed, seed[:31], testKey())
		})
	}
}

func TestInsecurePermissionsErrorSaysRule(t *testing.T) {
	skipOnWindows(t)
	path := filepath.Join(t.TempDir(), "ed25519.key")
	writeFile(t, path, testSeed, 0o640)
	_, err := LoadPrivateKey(path)
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *FileError", err)
	}
	if fe.Path != path || !strings.Contains(fe.Rule, "0640") || !strings.Contains(fe.Rule, "0600") {
		t.Errorf("FileError = %+v; want the path, the mode found and the mode wanted", fe)
	}
}

func TestSymlinkErrorSaysSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.key")
	writeFile(t, target, testSeed, 0o600)
	link := filepath.Join(dir, "ed25519.key")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	_, err := LoadPrivateKey(link)
	var fe *FileError
	if !errors.As(err, &fe) || !errors.Is(err, ErrNotRegularFile) || !strings.Contains(fe.Rule, "symlink") {
		t.Fatalf("err = %v; want a *FileError wrapping ErrNotRegularFile that says symlink", err)
	}
}

// TestWriteNoOverwriteRace has many writers race for one path: exactly one
// may win, and the file must hold the winner's key.
func TestWriteNoOverwriteRace(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "ed25519.key")
		const writers = 8
		errs := make(chan error, writers)
		start := make(chan struct{})
		for i := range writers {
			go func() {
				<-start
				errs <- WritePrivateKey(path, keyFromByte(byte(i+1)), false)
			}()
		}
		close(start)
		wins := 0
		for range writers {
			switch err := <-errs; {
			case err == nil:
				wins++
			case !errors.Is(err, ErrExists):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d writers succeeded without overwrite, want 1", round, wins)
		}
		if _, err := LoadPrivateKey(path); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDefaultPrivateKeyPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home) // Windows
	got, err := DefaultPrivateKeyPath("org.example.notes")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, ".config", "portal-org.example.notes", "ed25519.key")
	if got != want {
		t.Errorf("DefaultPrivateKeyPath = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "../x", "org.example.notes/../../etc"} {
		if _, err := DefaultPrivateKeyPath(bad); !errors.Is(err, ErrInvalidAppID) {
			t.Errorf("DefaultPrivateKeyPath(%q): err = %v, want ErrInvalidAppID", bad, err)
		}
	}
}
