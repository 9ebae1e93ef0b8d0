package conformance_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk/provider"
)

// providerEnv makes the test binary a provider process serving kb with the behaviour it names
// ("good" for none), so that a suite runs against a real child process, over the provider
// protocol, as it does at install.
const providerEnv = "CONFORMANCE_TEST_PROVIDER"

func TestMain(m *testing.M) {
	if b, ok := os.LookupEnv(providerEnv); ok {
		doc, err := manifest.Load([]byte(testManifest))
		if err != nil {
			panic(err)
		}
		if b == "good" {
			b = ""
		}
		provider.Serve(&kb{doc: doc, behaviour: b, release: make(chan struct{})})
		return
	}
	os.Exit(m.Run())
}

// startProvider starts the test binary as a provider with behaviour, supervised as capgate
// supervises one, and waits until it is up.
func startProvider(t *testing.T, behaviour string) *providers.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := providers.Start(providers.Config{Manifest: loadManifest(t), Command: exe, Args: []string{"-test.run=^$"},
		Env: []string{providerEnv + "=" + behaviour}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { p.Close() })
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if up, why := p.State(); up {
			return p
		} else if why != nil {
			t.Fatalf("the provider did not start: %v", why)
		}
	}
	t.Fatal("the provider did not come up")
	return nil
}

// Against a provider process: the dry run and the params check cross the protocol, and a
// provider that reports a write in a dry run, or that ignores its deadline, fails.
func TestRunAgainstAProviderProcess(t *testing.T) {
	reg := registry(t, "")
	got, err := conformance.Run(t.Context(), startProvider(t, "good").Handler(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []conformance.Status{conformance.StatusPassed, conformance.StatusPassed, conformance.StatusNotRun, conformance.StatusNoSuite}
	for i, r := range got {
		if r.Status != want[i] {
			t.Errorf("%v, want %s", r, want[i])
		}
	}
	if len(got) != 4 || got[0].Cases != 2 || !got[1].DryRun {
		t.Fatalf("%v", got)
	}

	got, err = conformance.Run(t.Context(), startProvider(t, "dry-write").Handler(), reg, nil, reindexID)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[0]; r.Status != conformance.StatusFailed || r.Case != "reindexes-in-a-dry-run" || r.Reason != "effects[0]: a write effect in a dry run, where nothing above read may be reported" {
		t.Fatalf("dry write: %v", r)
	}

	got, err = conformance.Run(t.Context(), startProvider(t, "hang").Handler(), reg, &conformance.Options{CaseTimeout: 200 * time.Millisecond}, searchID)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[0]; r.Status != conformance.StatusFailed || r.Reason != "did not finish within 200 ms" {
		t.Fatalf("hang: %v", r)
	}
}
