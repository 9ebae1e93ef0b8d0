package sandbox_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// Two sandboxes share nothing: while the first runs, with a file and unix sockets in its /tmp,
// an abstract socket, a TCP listener on its loopback and a file in its own folder, the second
// sees none of them, nor its processes.
func TestTwoSandboxesShareNothing(t *testing.T) {
	s := sandboxtest.Open(t)
	firstDir, secondDir := t.TempDir(), t.TempDir()
	first := self(t, "serve", firstDir)
	first.Writable = []string{firstDir}
	cmd, err := s.Command(first)
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the first sandbox: %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if b, err := os.ReadFile(filepath.Join(firstDir, "mine")); err != nil || !strings.Contains(string(b), "secret") {
		t.Fatalf("the first sandbox's folder: %q %v", b, err)
	}

	second := func(args ...string) string {
		sp := self(t, args...)
		sp.Writable = []string{secondDir}
		return strings.TrimSpace(run(t, s, sp))
	}
	for _, p := range []string{"/tmp/mine", filepath.Join(firstDir, "mine")} {
		if got := second("read", p); strings.Contains(got, "secret") {
			t.Errorf("the second reads %s: %s", p, got)
		}
	}
	for _, addr := range []string{"/tmp/mine.sock", "@capgate-sandbox-isolation"} {
		if got := second("dialunix", addr); !strings.HasPrefix(got, "refused") {
			t.Errorf("the second reaches %s: %s", addr, got)
		}
	}
	if got := second("dial", "127.0.0.1:4555"); !strings.HasPrefix(got, "refused") {
		t.Errorf("the second reaches the first's loopback: %s", got)
	}
	// The second sees its own processes only: bwrap's pid 1 and itself.
	if got := second("list", "/proc"); strings.Count(" "+got+" ", " 1 ") != 1 || len(pids(got)) > 3 {
		t.Errorf("the second's processes: %s", got)
	}
	if got := second("read", filepath.Join(secondDir, "mine")); strings.Contains(got, "secret") {
		t.Errorf("the second's own folder holds the first's file: %s", got)
	}
}

// pids returns the numeric names in a /proc listing.
func pids(listing string) []string {
	var out []string
	for _, f := range strings.Fields(listing) {
		if strings.Trim(f, "0123456789") == "" {
			out = append(out, f)
		}
	}
	return out
}
