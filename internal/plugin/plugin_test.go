package plugin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

const appID = "org.example.kb"

type fixture struct {
	host *Host
	key  ed25519.PrivateKey
	dir  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	trusted := filepath.Join(dir, "trusted")
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePublicKey(filepath.Join(trusted, appID+".pub"), pub, false); err != nil {
		t.Fatal(err)
	}
	reg, err := port.LoadDir("testdata/ports")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{
		host: &Host{
			DataDir: filepath.Join(dir, "data"),
			Trust:   keys.TrustStore{Dir: trusted},
			Intent: intent.Host{
				Credentials:  map[string]bool{"kb.search.api": true},
				Environments: map[string]bool{"dev": true, "prod": true},
			},
			Ports: reg,
			Now:   func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
		},
		key: priv,
		dir: dir,
	}
}

// baseManifest is version 1.0.0 of the example knowledge-base plugin.
func baseManifest() map[string]any {
	return map[string]any{
		"app_id": appID, "version": "1.0.0", "manifest_version": "1.0",
		"ports": []any{"knowledge.v1"},
		"capabilities": []any{
			map[string]any{
				"id": "kb.org.example.kb.search", "name": "Search", "description": "Searches the knowledge base.",
				"category": "TEXT_QUERY", "parameters": map[string]any{"type": "object"}, "returns": map[string]any{"type": "object"},
				"side_effects": "read", "implements": "knowledge.search@1.0", "idempotency": "natural",
				"credential_intents": []any{"kb.search.api"},
				"network_intents":    []any{map[string]any{"host": "kb.example.com", "port": 443}},
				"environment_scope":  []any{"dev"}, "timeout_ms": 10000,
				"conformance_suite": "conformance/knowledge/v1/basic",
			},
			map[string]any{
				"id": "kb.org.example.kb.reindex", "name": "Reindex", "description": "Rebuilds the index.",
				"category": "SYSTEM", "parameters": map[string]any{"type": "object"}, "returns": map[string]any{"type": "object"},
				"side_effects": "write", "implements": "knowledge.reindex@1.0", "dry_run": true,
				"evidence": []any{"audit.reindex"}, "filesystem_intents": []any{map[string]any{"path": "/sandbox/kb/index", "mode": "read_write"}},
			},
		},
	}
}

func capOf(m map[string]any, i int) map[string]any {
	return m["capabilities"].([]any)[i].(map[string]any)
}

// writePlugin lays out a package folder for m with the given content, declares its digest and
// references, and signs it with key (nil: unsigned).
func (f *fixture) writePlugin(t *testing.T, name string, m map[string]any, content string, key ed25519.PrivateKey) string {
	t.Helper()
	dir := filepath.Join(f.dir, "pkgs", name)
	files := map[string]string{
		"index/data.txt":  content,
		"sbom.spdx.json":  `{"spdxVersion":"SPDX-2.3","name":"kb"}`,
		"provenance.json": `{"builder":"test"}`,
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["digest"]; !ok {
		m["digest"] = pkg.Digest()
	}
	for field, path := range map[string]string{"sbom_ref": "sbom.spdx.json", "provenance_ref": "provenance.json"} {
		if _, ok := m[field]; !ok {
			fl, _ := pkg.File(path)
			m[field] = map[string]any{"path": path, "digest": fl.Digest}
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		doc, err := manifest.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if data, err = manifest.Sign(doc, key); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// upgradeTo sets version and previous_version and declares the exact recomputed delta.
func upgradeTo(t *testing.T, prev, next map[string]any, version string) {
	t.Helper()
	next["version"] = version
	next["previous_version"] = prev["version"]
	parse := func(m map[string]any) *manifest.Document {
		b, _ := json.Marshal(m)
		d, err := manifest.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ch := delta.Recompute(parse(prev), parse(next))
	b, _ := json.Marshal(ch)
	var decl any
	json.Unmarshal(b, &decl)
	next["permissions_delta"] = decl
}

// clone copies a manifest without what writePlugin fills in for its own package.
func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	json.Unmarshal(b, &out)
	for _, k := range []string{"digest", "sbom_ref", "provenance_ref", "signature"} {
		delete(out, k)
	}
	return out
}

func mustInstall(t *testing.T, h *Host, src string, opts Options) Outcome {
	t.Helper()
	out, err := h.Install(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func locked(t *testing.T, h *Host) *lock.File {
	t.Helper()
	f, err := lock.Load(h.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewPluginIsAWideningUntilApproved(t *testing.T) {
	f := newFixture(t)
	src := f.writePlugin(t, "kb-1.0.0", baseManifest(), "v1", f.key)
	out := mustInstall(t, f.host, src, Options{})
	if !out.Pending || out.Applied || out.Refused || out.Result.Verdict != delta.Widening {
		t.Fatalf("first install: %+v", out)
	}
	lf := locked(t, f.host)
	if _, ok := lf.Plugins[appID]; ok {
		t.Fatal("installed before approval")
	}
	if _, ok := lf.Pending[appID]; !ok {
		t.Fatal("no pending widening recorded")
	}
	out, err := f.host.Approve(appID, "test")
	if err != nil || !out.Applied {
		t.Fatalf("approve: %+v %v", out, err)
	}
	lf = locked(t, f.host)
	e, ok := lf.Plugins[appID]
	if !ok || e.Version != "1.0.0" || e.Tier != 1 || e.ApprovedBy != "test" || len(lf.Pending) != 0 {
		t.Fatalf("lock after approval: %+v", lf)
	}
	pkg, _ := archive.Open(src)
	if e.Digest != pkg.Digest() || !strings.HasPrefix(e.Signer, "sha256:") {
		t.Fatalf("lock entry digest %s signer %s", e.Digest, e.Signer)
	}
	if _, err := f.host.Approve(appID, "test"); !errors.Is(err, ErrNoPending) {
		t.Fatalf("second approve: %v", err)
	}
	// Installing again is an error: upgrades say so.
	if _, err := f.host.Install(src, Options{}); !errors.Is(err, ErrInstalled) {
		t.Fatalf("install twice: %v", err)
	}
}

// ApproveSeen approves only the widening the reviewer was shown: one replaced by another
// install of the same plugin (a wider one here) is ErrPendingChanged and stays pending.
func TestApproveSeen(t *testing.T) {
	f := newFixture(t)
	v1 := baseManifest()
	mustInstall(t, f.host, f.writePlugin(t, "kb-1.0.0", v1, "v1", f.key), Options{})
	shown := PendingHash(locked(t, f.host).Pending[appID])
	if !strings.HasPrefix(shown, "sha256:") || len(shown) != len("sha256:")+64 {
		t.Fatalf("PendingHash %q", shown)
	}
	// Another install replaces the pending widening before the reviewer approves: the same
	// content (so the same digest), one more network destination in the manifest.
	wider := clone(v1)
	capOf(wider, 0)["network_intents"] = append(capOf(wider, 0)["network_intents"].([]any), map[string]any{"host": "mirror.example.com", "port": 443})
	if err := f.host.Remove(appID); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, f.host, f.writePlugin(t, "kb-1.0.0-wider", wider, "v1", f.key), Options{})
	p := locked(t, f.host).Pending[appID]
	if PendingHash(p) == shown {
		t.Fatal("two manifests share a PendingHash")
	}
	for _, seen := range []string{shown, "", "sha256:" + strings.Repeat("0", 64)} {
		if _, err := f.host.ApproveSeen(appID, seen, "test"); !errors.Is(err, ErrPendingChanged) {
			t.Fatalf("approving %q: %v", seen, err)
		}
	}
	if lf := locked(t, f.host); len(lf.Plugins) != 0 || len(lf.Pending) != 1 {
		t.Fatalf("a refused approval changed the lock: %+v", lf)
	}
	out, err := f.host.ApproveSeen(appID, PendingHash(p), "test")
	if err != nil || !out.Applied {
		t.Fatalf("approving what was shown: %+v %v", out, err)
	}
	if e := locked(t, f.host).Plugins[appID]; e.ApprovedBy != "test" || string(e.Manifest) != string(p.Entry.Manifest) {
		t.Fatalf("lock after approval: %+v", e)
	}
}

func (f *fixture) installed(t *testing.T, m map[string]any, name string) {
	t.Helper()
	out := mustInstall(t, f.host, f.writePlugin(t, name, m, name, f.key), Options{Approve: true, Approver: "test"})
	if !out.Applied {
		t.Fatalf("install %s: %+v", name, out)
	}
}

func TestUpgrades(t *testing.T) {
	f := newFixture(t)
	v1 := baseManifest()
	f.installed(t, v1, "kb-1.0.0")

	// 1.1.0 widens: a second network destination and a longer timeout.
	v11 := clone(v1)
	capOf(v11, 0)["network_intents"] = append(capOf(v11, 0)["network_intents"].([]any), map[string]any{"host": "mirror.example.com", "port": 443})
	capOf(v11, 0)["timeout_ms"] = 0
	upgradeTo(t, v1, v11, "1.1.0")
	src11 := f.writePlugin(t, "kb-1.1.0", v11, "v1.1", f.key)
	before, _ := os.ReadFile(filepath.Join(f.host.DataDir, lock.FileName))
	out := mustInstall(t, f.host, src11, Options{Upgrade: true})
	if !out.Pending || out.Result.Verdict != delta.Widening {
		t.Fatalf("widening upgrade: %+v", out)
	}
	if e := locked(t, f.host).Plugins[appID]; e.Version != "1.0.0" {
		t.Fatalf("widening applied without approval: %s", e.Version)
	}
	var sawHost, sawTimeout bool
	for _, c := range out.Result.Changes {
		sawHost = sawHost || (c.Widening && strings.HasPrefix(c.Path, "capabilities[0].network_intents"))
		sawTimeout = sawTimeout || (c.Widening && c.Path == "capabilities[0].timeout_ms")
	}
	if !sawHost || !sawTimeout {
		t.Fatalf("diff misses a widening: %+v", out.Result.Changes)
	}
	if _, err := f.host.Approve(appID, "test"); err != nil {
		t.Fatal(err)
	}
	if e := locked(t, f.host).Plugins[appID]; e.Version != "1.1.0" {
		t.Fatalf("after approval: %s", e.Version)
	}
	_ = before

	// 1.2.0 narrows: the mirror goes, the timeout comes back; it applies at once.
	v12 := clone(v11)
	capOf(v12, 0)["network_intents"] = capOf(v1, 0)["network_intents"]
	capOf(v12, 0)["timeout_ms"] = 5000
	upgradeTo(t, v11, v12, "1.2.0")
	out = mustInstall(t, f.host, f.writePlugin(t, "kb-1.2.0", v12, "v1.2", f.key), Options{Upgrade: true})
	if !out.Applied || out.Result.Verdict != delta.Narrowing {
		t.Fatalf("narrowing upgrade: %+v", out)
	}

	// A rollback to 1.0.0 is a widening: refused until approved.
	out = mustInstall(t, f.host, f.writePlugin(t, "kb-1.0.0-again", clone(v1), "kb-1.0.0", f.key), Options{Upgrade: true})
	if !out.Pending || out.Result.Verdict != delta.Widening {
		t.Fatalf("rollback: %+v", out)
	}
	if e := locked(t, f.host).Plugins[appID]; e.Version != "1.2.0" {
		t.Fatalf("rollback applied without approval: %s", e.Version)
	}
}

func TestRejectsLeaveTheLockAsItWas(t *testing.T) {
	f := newFixture(t)
	v1 := baseManifest()
	f.installed(t, v1, "kb-1.0.0")
	lockPath := filepath.Join(f.host.DataDir, lock.FileName)
	before, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	wrongPrev := clone(v1)
	upgradeTo(t, v1, wrongPrev, "1.1.0")
	wrongPrev["previous_version"] = "0.9.0"
	badDelta := clone(v1)
	upgradeTo(t, v1, badDelta, "1.1.0")
	capOf(badDelta, 0)["timeout_ms"] = 20000 // changed after the delta was declared
	cases := map[string]string{
		"same version, other content": f.writePlugin(t, "same", clone(v1), "other content", f.key),
		"previous_version not locked": f.writePlugin(t, "prev", wrongPrev, "x", f.key),
		"declared delta differs":      f.writePlugin(t, "delta", badDelta, "y", f.key),
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			out := mustInstall(t, f.host, src, Options{Upgrade: true, Approve: true})
			if !out.Refused || out.Applied || out.Result.Verdict != delta.Reject || len(out.Result.Reasons) == 0 {
				t.Fatalf("outcome: %+v", out)
			}
			after, _ := os.ReadFile(lockPath)
			if !bytes.Equal(before, after) {
				t.Fatal("a reject changed the lock")
			}
		})
	}
}

func TestRefusedPackages(t *testing.T) {
	f := newFixture(t)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	past := baseManifest()
	past["deprecated_after"] = "2026-01-01T00:00:00Z"
	cases := []struct {
		name string
		src  func() string
		path string
	}{
		{"declared digest differs", func() string {
			m := baseManifest()
			m["digest"] = "sha256:" + strings.Repeat("0", 64)
			return f.writePlugin(t, "digest", m, "x", f.key)
		}, "digest"},
		{"no digest", func() string {
			m := baseManifest()
			m["digest"] = nil
			return f.writePlugin(t, "nodigest", m, "x", f.key)
		}, "digest"},
		{"unsigned", func() string { return f.writePlugin(t, "unsigned", baseManifest(), "x", nil) }, "signature"},
		{"untrusted key", func() string { return f.writePlugin(t, "other", baseManifest(), "x", otherKey) }, "signature"},
		{"sbom digest wrong", func() string {
			m := baseManifest()
			m["sbom_ref"] = map[string]any{"path": "sbom.spdx.json", "digest": "sha256:" + strings.Repeat("1", 64)}
			return f.writePlugin(t, "sbom", m, "x", f.key)
		}, "sbom_ref"},
		{"provenance missing", func() string {
			m := baseManifest()
			m["provenance_ref"] = nil
			return f.writePlugin(t, "prov", m, "x", f.key)
		}, "provenance_ref"},
		{"past deprecation", func() string { return f.writePlugin(t, "old", past, "x", f.key) }, "deprecated_after"},
		{"metadata address", func() string {
			m := baseManifest()
			capOf(m, 0)["network_intents"] = []any{map[string]any{"host": "169.254.169.254", "port": 80}}
			return f.writePlugin(t, "meta", m, "x", f.key)
		}, "capabilities[0].network_intents[0].host"},
		{"credential not in catalog", func() string {
			m := baseManifest()
			capOf(m, 0)["credential_intents"] = []any{"aws.root"}
			return f.writePlugin(t, "cred", m, "x", f.key)
		}, "capabilities[0].credential_intents[0]"},
		{"path outside the sandbox", func() string {
			m := baseManifest()
			capOf(m, 1)["filesystem_intents"] = []any{map[string]any{"path": "/etc/shadow"}}
			return f.writePlugin(t, "path", m, "x", f.key)
		}, "capabilities[1].filesystem_intents[0].path"},
		{"side effect below the port floor", func() string {
			m := baseManifest()
			capOf(m, 1)["side_effects"] = "read"
			return f.writePlugin(t, "floor", m, "x", f.key)
		}, "capabilities[1].side_effects"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.host.Install(tc.src(), Options{Approve: true})
			if err != nil {
				t.Fatal(err)
			}
			if !out.Refused || out.Applied {
				t.Fatalf("outcome: %+v", out)
			}
			found := false
			for _, p := range out.Problems {
				found = found || p.Path == tc.path
				for _, bad := range []string{"169.254.169.254", "aws.root", "/etc/shadow"} {
					if strings.Contains(p.Rule, bad) {
						t.Errorf("problem echoes the value: %s", p)
					}
				}
			}
			if !found {
				t.Fatalf("no problem at %s: %v", tc.path, out.Problems)
			}
			if lf := locked(t, f.host); len(lf.Plugins)+len(lf.Pending) != 0 {
				t.Fatal("a refused package reached the lock")
			}
		})
	}

	// Explicit policy lets the deprecated version and the unsigned plugin in.
	f.host.AllowDeprecated = true
	out := mustInstall(t, f.host, f.writePlugin(t, "old2", clone(past), "x", f.key), Options{Approve: true})
	if !out.Applied {
		t.Fatalf("deprecated under policy: %+v", out)
	}
	if err := f.host.Remove(appID); err != nil {
		t.Fatal(err)
	}
	f.host.AllowTier2Unsafe = true
	out = mustInstall(t, f.host, f.writePlugin(t, "unsigned2", baseManifest(), "x", nil), Options{Approve: true})
	if !out.Applied || out.Tier != manifest.Tier2 || out.Signer != "" {
		t.Fatalf("tier 2 under policy: %+v", out)
	}
}

// TestRuntimeEquality starts a real child process (this test binary) that reports a manifest,
// and refuses it unless it is the installed one, byte for byte in canonical form.
func TestRuntimeEquality(t *testing.T) {
	f := newFixture(t)
	m := baseManifest()
	src := f.writePlugin(t, "kb", m, "v1", f.key)
	if out := mustInstall(t, f.host, src, Options{Approve: true}); !out.Applied {
		t.Fatalf("install: %+v", out)
	}
	e := locked(t, f.host).Plugins[appID]
	installedJSON, _ := os.ReadFile(filepath.Join(src, "manifest.json"))

	wider := clone(m)
	capOf(wider, 0)["network_intents"] = []any{map[string]any{"host": "evil.example.net", "port": 443}}
	widerDir := f.writePlugin(t, "kb-wider", wider, "v1", f.key)
	widerJSON, _ := os.ReadFile(filepath.Join(widerDir, "manifest.json"))

	for name, tc := range map[string]struct {
		report []byte
		ok     bool
	}{
		"the installed manifest": {e.Manifest, true},
		"the same, indented":     {installedJSON, true},
		"a wider manifest":       {widerJSON, false},
		"not a manifest":         {[]byte("hello"), false},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "report.json")
			if err := os.WriteFile(file, tc.report, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("CAPGATE_TEST_REPORT_FILE", file)
			got, err := ReportedManifest(context.Background(), os.Args[0], "-test.run=^TestHelperPlugin$")
			if err != nil {
				t.Fatal(err)
			}
			err = VerifyRuntime(e, got)
			if tc.ok && err != nil {
				t.Fatalf("refused the installed manifest: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrManifestMismatch) {
				t.Fatalf("VerifyRuntime = %v, want ErrManifestMismatch", err)
			}
		})
	}
}

// TestHelperPlugin is the child process of TestRuntimeEquality: a plugin that reports its
// manifest when asked.
func TestHelperPlugin(t *testing.T) {
	if os.Getenv(EnvReportManifest) != "1" {
		t.Skip("child process of TestRuntimeEquality")
	}
	b, err := os.ReadFile(os.Getenv("CAPGATE_TEST_REPORT_FILE"))
	if err != nil {
		os.Exit(3)
	}
	os.Stdout.Write(b)
	os.Exit(0)
}
