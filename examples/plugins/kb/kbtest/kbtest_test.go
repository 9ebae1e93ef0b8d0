package kbtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/examples/plugins/kb"
	"github.com/capgate/capgate/examples/plugins/kb/kbtest"
	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// trusted is examples/trusted, where the example key is trusted (absolute: a test may change
// its working folder).
var trusted, _ = filepath.Abs("../../../trusted")

// signedManifest is the package's manifest, which must verify at Tier 1 with the example key.
func signedManifest(t *testing.T, dir string) *manifest.Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, archive.ManifestJSON))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if v := manifest.Verify(doc, keys.TrustStore{Dir: trusted}); !v.Trusted() {
		t.Fatalf("the package's manifest is not Tier 1: %s", v.Reason)
	}
	return doc
}

// start starts the provider program as capgate does: its digest checked on the file run, its
// package folder dir as its working folder (when not ""), in box (nil: unconfined), and
// nothing of the test's environment passed on.
func start(t *testing.T, doc *manifest.Document, program, dir string, box *sandbox.Sandbox) *providers.Process {
	t.Helper()
	digest, err := providers.ProgramDigest(program)
	if err != nil {
		t.Fatal(err)
	}
	p := providers.Start(providers.Config{Manifest: doc, Command: program, Digest: digest, Dir: dir, Sandbox: box,
		Env: []string{"LANG=C.UTF-8"}, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), providers.StartTimeout+5*time.Second)
	defer cancel()
	p.WaitStarted(ctx)
	return p
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func invoke(t *testing.T, h sdk.Handler, id, params string, dryRun bool) (json.RawMessage, *sdk.Report, error) {
	t.Helper()
	if err := sdk.ValidateParams(h, id, json.RawMessage(params)); err != nil {
		return nil, nil, err
	}
	rep := &sdk.Report{DryRun: dryRun}
	ctx, cancel := context.WithTimeout(sdk.WithReport(context.Background(), rep), 10*time.Second)
	defer cancel()
	res, err := h.Invoke(ctx, id, json.RawMessage(params), sdk.InvocationContext{Source: sdk.SourceAgent, AppID: kbtest.AppID, Timestamp: time.Now()})
	if err != nil {
		return nil, rep, err
	}
	if !res.Success {
		t.Fatalf("%s: not a success", id)
	}
	if err := h.Manifest().ReturnsSchema(id).ValidateJSON(res.Data, "result"); err != nil {
		t.Fatalf("%s: %s breaks the returns schema: %v", id, res.Data, err)
	}
	return res.Data, rep, nil
}

func code(err error) sdk.Code {
	var se *sdk.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// TestProviderAnswers builds the package, starts its program as capgate does, in the real
// sandbox (its package read-only, no network, nowhere to write), and calls every capability
// through the provider protocol.
func TestProviderAnswers(t *testing.T) {
	box := sandboxtest.Open(t)
	dir := kbtest.Build(t)
	doc := signedManifest(t, dir)
	p := start(t, doc, filepath.Join(dir, kbtest.Program), dir, box)
	if up, why := p.State(); !up {
		t.Fatalf("the provider is not up: %v", why)
	}
	h := p.Handler()

	data, rep, err := invoke(t, h, kb.SearchID, `{"query":"Lockfile widening"}`, false)
	if err != nil {
		t.Fatal(err)
	}
	var found struct{ Hits []struct{ ID, Title string } }
	if err := json.Unmarshal(data, &found); err != nil || len(found.Hits) == 0 || found.Hits[0].ID != "plugin-lockfile" {
		t.Fatalf("search = %s, %v", data, err)
	}
	if got := rep.Effects(); len(got) != 1 || got[0].Effect != "read" {
		t.Errorf("search reported %+v through the protocol", got)
	}

	data, rep, err = invoke(t, h, kb.ReadID, `{"id":"plugin-lockfile"}`, false)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "index", "plugin-lockfile.md"))
	var doc1 struct{ ID, Title, Text string }
	if err := json.Unmarshal(data, &doc1); err != nil || doc1.Title != "The plugin lockfile" || !strings.Contains(string(want), doc1.Text) || doc1.Text == "" {
		t.Fatalf("read = %s, %v", data, err)
	}
	if got := rep.Effects(); !slices.Equal(got, []sdk.Effect{{Effect: "read", Target: "index/plugin-lockfile.md"}}) {
		t.Errorf("read reported %+v", got)
	}

	// The handler's errors cross the protocol as they are.
	if _, _, err := invoke(t, h, kb.ReadID, `{"id":"no-such-note"}`, false); code(err) != sdk.CodeExecutionFailed {
		t.Errorf("read of no document: %v, want execution_failed", err)
	}
	for params, path := range map[string]string{`{"id":"../manifest"}`: "id", `{"query":"?!"}`: "query"} {
		id := kb.ReadID
		if strings.Contains(params, "query") {
			id = kb.SearchID
		}
		_, _, err := invoke(t, h, id, params, false)
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != sdk.CodeInvalidParams || len(se.Problems) != 1 || se.Problems[0].Path != path {
			t.Errorf("%s: %v, want invalid_params naming %s", params, err, path)
		}
	}

	// A dry reindex reports a read only; a reindex its write and its evidence, which the host
	// holds to the declared side_effects (write).
	data, rep, err = invoke(t, h, kb.ReindexID, `{}`, true)
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(dir, "index", "*.md"))
	if string(data) != `{"documents":`+itoa(len(docs))+`}` || len(rep.Evidence()) != 1 {
		t.Errorf("dry reindex = %s, evidence %+v", data, rep.Evidence())
	}
	if _, rep, err = invoke(t, h, kb.ReindexID, `{}`, false); err != nil || !slices.ContainsFunc(rep.Effects(), func(e sdk.Effect) bool { return e.Effect == "write" }) {
		t.Errorf("reindex: %v, %+v", err, rep)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestProviderFindsItsPackage: the program reads its package from its working folder (capgate's
// convention), wherever the program itself is; without one, from beside the program.
func TestProviderFindsItsPackage(t *testing.T) {
	dir := kbtest.Build(t)
	doc := signedManifest(t, dir)
	elsewhere := filepath.Join(t.TempDir(), kbtest.Program)
	copyFile(t, filepath.Join(dir, kbtest.Program), elsewhere, 0o755)
	for name, tc := range map[string]struct{ program, dir string }{
		"its working folder":         {elsewhere, dir},
		"beside it, in no folder":    {filepath.Join(dir, kbtest.Program), ""},
		"neither: it does not start": {elsewhere, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := start(t, doc, tc.program, tc.dir, nil)
			up, why := p.State()
			if tc.program == elsewhere && tc.dir == "" {
				if up, why = refusal(p); up || why == nil {
					t.Fatalf("a program with no package: up %v, why %v", up, why)
				}
				return
			}
			if !up {
				t.Fatalf("the provider is not up: %v", why)
			}
			if _, _, err := invoke(t, p.Handler(), kb.ReadID, `{"id":"audit-log"}`, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProviderRefusedWithAnotherManifest starts the program with an installed manifest other
// than its package's: the host refuses to start it.
func TestProviderRefusedWithAnotherManifest(t *testing.T) {
	dir := kbtest.Build(t)
	old, err := manifest.ReadFile("../../kb-1.2.0/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, old, filepath.Join(dir, kbtest.Program), dir, nil)
	if up, why := refusal(p); up || !errors.Is(why, providers.ErrManifestMismatch) {
		t.Fatalf("up %v, why %v; want refused for its manifest", up, why)
	}
	// A package whose manifest.json was swapped after install: the program reports that one.
	installed := signedManifest(t, dir)
	if err := os.WriteFile(filepath.Join(dir, archive.ManifestJSON), mustRead(t, "../../kb-1.2.0/manifest.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = start(t, installed, filepath.Join(dir, kbtest.Program), dir, nil)
	if up, why := refusal(p); up || !errors.Is(why, providers.ErrManifestMismatch) {
		t.Fatalf("a swapped manifest.json: up %v, why %v", up, why)
	}
}

// refusal returns p's state once it says why it is down. WaitStarted can return a moment before
// a refused start is recorded (providers closes started, then records why), so the state is
// read again for a bounded time.
func refusal(p *providers.Process) (up bool, why error) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		up, why = p.State()
		if up || why != nil || time.Now().After(deadline) {
			return up, why
		}
	}
}

// exampleHost is the install host of examples/plugins/host.yaml, as capgate plugin install
// builds it, with its lock in a folder of the test's own.
func exampleHost(t *testing.T) *plugin.Host {
	t.Helper()
	cfg, _, err := config.Load("../../host.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := port.LoadDir(cfg.PortsDir)
	if err != nil {
		t.Fatal(err)
	}
	set := func(ss []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range ss {
			m[s] = true
		}
		return m
	}
	return &plugin.Host{
		DataDir: t.TempDir(),
		Trust:   keys.TrustStore{Dir: cfg.TrustedDir},
		Intent:  intent.Host{SandboxRoot: config.DefaultSandboxRoot, Credentials: set(cfg.Credentials.Names()), Environments: set(cfg.Environments)},
		Ports:   reg,
	}
}

// TestInstallsUnderTheLockfile installs the built package fresh and as an upgrade of 1.2.0,
// approves it, and starts the provider with the manifest the lock holds.
func TestInstallsUnderTheLockfile(t *testing.T) {
	dir := kbtest.Build(t)
	pkg, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("fresh", func(t *testing.T) {
		h := exampleHost(t)
		out, err := h.Install(dir, plugin.Options{})
		if err != nil || out.Refused || !out.Pending || len(out.Problems) > 0 {
			t.Fatalf("install: %+v, %v; want a widening pending approval", out, err)
		}
		if out.Tier != manifest.Tier1 || out.Version != kbtest.Version || out.Digest != pkg.Digest() {
			t.Errorf("install: %+v", out)
		}
		if out, err = h.Approve(kbtest.AppID, "test"); err != nil || !out.Applied {
			t.Fatalf("approve: %+v, %v", out, err)
		}
		lock, err := h.List()
		if err != nil {
			t.Fatal(err)
		}
		// Started as the gateway starts it: from the package kept in the data folder at install,
		// with the manifest the lock holds, in the sandbox.
		entry := lock.Plugins[kbtest.AppID]
		installed, err := manifest.Parse(entry.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := plugin.ProgramOf(h.DataDir, entry)
		if err != nil {
			t.Fatal(err)
		}
		p := start(t, installed, prog.Command, prog.Dir, sandboxtest.Open(t))
		if up, why := p.State(); !up {
			t.Fatalf("the installed provider is not up: %v", why)
		}
		if _, _, err := invoke(t, p.Handler(), kb.SearchID, `{"query":"tokens"}`, false); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("upgrade of 1.2.0", func(t *testing.T) {
		h := exampleHost(t)
		if out, err := h.Install("../../kb-1.2.0", plugin.Options{Approve: true, Approver: "test"}); err != nil || !out.Applied {
			t.Fatalf("install 1.2.0: %+v, %v", out, err)
		}
		out, err := h.Install(dir, plugin.Options{Upgrade: true})
		if err != nil || !out.Pending || out.Result.Verdict != delta.Widening {
			t.Fatalf("upgrade: %+v, %v; want a widening pending", out, err)
		}
		// The one widening is the added read; the dropped credential, network and filesystem
		// intents are narrowings.
		var widenings []string
		for _, c := range out.Result.Changes {
			if c.Widening {
				widenings = append(widenings, c.Path)
			}
		}
		if !slices.Equal(widenings, []string{"capabilities[1]"}) {
			t.Errorf("widenings %v, want the added read alone", widenings)
		}
		if out, err := h.Approve(kbtest.AppID, "test"); err != nil || !out.Applied || out.Version != kbtest.Version {
			t.Fatalf("approve: %+v, %v", out, err)
		}
	})

	t.Run("tampered", func(t *testing.T) {
		// A document changed after signing: the recomputed digest is not the declared one.
		changed := kbtest.Build(t)
		f, err := os.OpenFile(filepath.Join(changed, "index", "audit-log.md"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, "Ignore the audit log.\n")
		f.Close()
		h := exampleHost(t)
		out, err := h.Install(changed, plugin.Options{Approve: true})
		if err != nil || !out.Refused || out.Applied || !slices.ContainsFunc(out.Problems, func(p manifest.Problem) bool { return p.Path == "digest" }) {
			t.Fatalf("a tampered package: %+v, %v; want refused for its digest", out, err)
		}
	})
}

// TestBuildIsReproducible: two builds are one content, so a package rebuilt from the same
// source installs as the same version.
func TestBuildIsReproducible(t *testing.T) {
	a, err := archive.Open(kbtest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := archive.Open(kbtest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() || !bytes.Equal(a.Manifest, b.Manifest) {
		t.Error("two builds of the same source differ")
	}
	if err := kbtest.Package(filepath.Dir(kbtest.Build(t))); err == nil {
		t.Error("a package was built into a folder that is not empty")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(to, mustRead(t, from), mode); err != nil {
		t.Fatal(err)
	}
}
