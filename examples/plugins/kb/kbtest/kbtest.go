// Package kbtest builds the example knowledge-base plugin package (examples/plugins/kb) for
// tests, in Go and without bash, the way package.sh does: the provider program (compiled once
// per test binary, with package.sh's flags), its index, README, SBOM and provenance, and
// manifest.json, the source manifest with its digests filled in (internal/archive), signed with
// the example key (manifest.Sign) and verified at Tier 1 against examples/trusted.
//
//	dir := kbtest.Build(t) // a fresh package in t.TempDir(), its program at dir+"/provider"
//
// It needs the go command and the module's source tree, as every test of the module has.
package kbtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// The package built.
const (
	AppID   = "org.example.kb"
	Version = "2.0.0"
	// Program is the provider's executable in the package: at its root, as capgate expects.
	Program = "provider"
)

var (
	once    sync.Once
	repo    string // the module's root folder
	program string // the compiled provider, shared by every package built
	failure error
)

// Build builds a fresh package into a folder of t.TempDir() and returns the folder. The program
// is compiled once per test binary; each call lays out, digests and signs its own copy, which
// the test may change.
func Build(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kb-"+Version)
	if err := Package(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Repo returns the module's root folder, where examples/ lies.
func Repo() (string, error) {
	prepare()
	return repo, failure
}

// prepare finds the module and compiles the program, once.
func prepare() {
	once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			failure = fmt.Errorf("kbtest: go env GOMOD: %w", err)
			return
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			failure = errors.New("kbtest: not inside the module's source tree")
			return
		}
		repo = filepath.Dir(gomod)
		dir, err := os.MkdirTemp("", "kbtest-provider")
		if err != nil {
			failure = fmt.Errorf("kbtest: %w", err)
			return
		}
		program = filepath.Join(dir, Program)
		// package.sh's flags: the same source compiles to the same program.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", program, "./examples/plugins/kb/provider")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			failure = fmt.Errorf("kbtest: building the provider: %v\n%s", err, out)
		}
	})
}

// Package builds the package into dir, which must be absent or empty.
func Package(dir string) error {
	prepare()
	if failure != nil {
		return failure
	}
	src := filepath.Join(repo, "examples", "plugins", "kb")
	if entries, err := os.ReadDir(dir); len(entries) > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("kbtest: %s must be absent or empty", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o755); err != nil {
		return fmt.Errorf("kbtest: %w", err)
	}
	files := map[string]string{Program: program} // package path → source
	for _, name := range []string{"README.md", "sbom.spdx.json", "provenance.json"} {
		files[name] = filepath.Join(src, name)
	}
	docs, err := filepath.Glob(filepath.Join(src, "index", "*.md"))
	if err != nil || len(docs) == 0 {
		return fmt.Errorf("kbtest: no document in %s/index", src)
	}
	for _, d := range docs {
		files["index/"+filepath.Base(d)] = d
	}
	for name, from := range files {
		mode := os.FileMode(0o644)
		if name == Program {
			mode = 0o755
		}
		if err := copyFile(from, filepath.Join(dir, filepath.FromSlash(name)), mode); err != nil {
			return err
		}
	}
	// The content digest covers every file but manifest.json: a placeholder while it is taken.
	mpath := filepath.Join(dir, archive.ManifestJSON)
	if err := os.WriteFile(mpath, []byte("{}"), 0o644); err != nil {
		return fmt.Errorf("kbtest: %w", err)
	}
	pkg, err := archive.Open(dir)
	if err != nil {
		return fmt.Errorf("kbtest: %w", err)
	}
	unsigned, err := fillDigests(filepath.Join(repo, "examples", "plugins", "src", "kb-"+Version+".json"), pkg)
	if err != nil {
		return err
	}
	signed, err := sign(unsigned)
	if err != nil {
		return err
	}
	return os.WriteFile(mpath, signed, 0o644)
}

// fillDigests returns the source manifest at path with its three empty digests filled in: the
// package's content digest and the digests of the files sbom_ref and provenance_ref name.
func fillDigests(path string, pkg *archive.Package) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kbtest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers stay as written
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("kbtest: %s: %w", path, err)
	}
	if d, ok := m["digest"].(string); !ok || d != "" {
		return nil, fmt.Errorf(`kbtest: %s: digest: must be "" in the source, filled in here`, path)
	}
	m["digest"] = pkg.Digest()
	for _, field := range []string{"sbom_ref", "provenance_ref"} {
		ref, _ := m[field].(map[string]any)
		p, _ := ref["path"].(string)
		f, ok := pkg.File(p)
		if !ok {
			return nil, fmt.Errorf("kbtest: %s: %s.path: names no file of the package", path, field)
		}
		ref["digest"] = f.Digest
	}
	return json.Marshal(m)
}

// sign signs the manifest with the example key and checks it is valid and verifies at Tier 1.
func sign(unsigned []byte) ([]byte, error) {
	doc, err := manifest.Load(unsigned)
	if err != nil {
		return nil, fmt.Errorf("kbtest: the manifest: %w", err)
	}
	// The example key is committed world-readable; a private key is loaded only at mode 0600.
	tmp, err := os.MkdirTemp("", "kbtest-key")
	if err != nil {
		return nil, fmt.Errorf("kbtest: %w", err)
	}
	defer os.RemoveAll(tmp)
	keyPath := filepath.Join(tmp, "ed25519.key")
	if err := copyFile(filepath.Join(repo, "examples", "plugins", "ed25519.key"), keyPath, 0o600); err != nil {
		return nil, err
	}
	key, err := keys.LoadPrivateKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("kbtest: %w", err)
	}
	signed, err := manifest.Sign(doc, key)
	if err != nil {
		return nil, fmt.Errorf("kbtest: %w", err)
	}
	if v := manifest.VerifyBytes(signed, keys.TrustStore{Dir: filepath.Join(repo, "examples", "trusted")}); !v.Trusted() {
		return nil, fmt.Errorf("kbtest: the signed manifest does not verify against examples/trusted: %s", v.Reason)
	}
	return signed, nil
}

// copyFile copies from to a new file to, with mode: a copy, never a link (a package refuses
// files with more than one link).
func copyFile(from, to string, mode os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("kbtest: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("kbtest: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("kbtest: %s: %w", to, err)
	}
	if err := out.Chmod(mode); err != nil { // whatever the umask
		out.Close()
		return fmt.Errorf("kbtest: %w", err)
	}
	return out.Close()
}
