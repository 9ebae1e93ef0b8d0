package lock_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/lock"
)

// secret marks text a test plants in a lockfile; no error may contain it.
const secret = "SECRET"

// testManifest returns the canonical bytes of a manifest for appID at version with caps
// capabilities. Its descriptions hold characters encoding/json escapes by default (<, &,
// U+2028), which must survive Save and Load as the canonical form writes them.
func testManifest(t testing.TB, appID, version string, caps int) json.RawMessage {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"version":%q,"app_id":%q,"manifest_version":"1.0","capabilities":[`, version, appID)
	for i := range caps {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"notes.%s.op%d","name":"Operation %d","description":"Does <b>thing</b> %d & more\u2028over several lines.",`+
			`"category":"TEXT_QUERY","parameters":{"type":"object","required":["query"],"properties":{"query":{"type":"string","minLength":1},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20}},"additionalProperties":false},`+
			`"returns":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}}}},"side_effects":"read"}`, appID, i, i, i)
	}
	b.WriteString(`],"signature":"ed25519:AAAA"}`)
	c, err := jcs.Canonicalize([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// testEntry returns a valid Tier 1 entry for appID.
func testEntry(t testing.TB, appID, version string, caps int) lock.Entry {
	return lock.Entry{
		AppID:       appID,
		Version:     version,
		Digest:      digestOf("artifact " + appID + version),
		Signer:      digestOf("key " + appID),
		Tier:        1,
		Manifest:    testManifest(t, appID, version, caps),
		Source:      "https://plugins.example.com/" + appID,
		InstalledAt: time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC),
		ApprovedBy:  "alice",
	}
}

// testFile returns a valid lockfile with two plugins, one unsigned, and a pending widening.
func testFile(t testing.TB) *lock.File {
	f := lock.New()
	f.Plugins["org.example.notes"] = testEntry(t, "org.example.notes", "1.4.0", 2)
	u := testEntry(t, "org.example.unsigned", "0.1.0-beta.1+build.7", 1)
	u.Signer, u.Tier, u.ApprovedBy, u.Source = "", 2, "", ""
	f.Plugins[u.AppID] = u
	f.Pending["org.example.notes"] = lock.Pending{
		Entry:   testEntry(t, "org.example.notes", "1.5.0", 3),
		Changes: json.RawMessage(`{"added":["notes.org.example.notes.op2"],"note":"<&>"}`),
		Since:   time.Date(2025, 3, 2, 8, 30, 0, 0, time.UTC),
	}
	return f
}

// bigFile returns a lockfile of plugins plugins whose manifests have caps capabilities each,
// with version tagging every entry, so that two such files differ throughout.
func bigFile(t testing.TB, plugins, caps int, version string) *lock.File {
	f := lock.New()
	for i := range plugins {
		id := fmt.Sprintf("org.big.p%d", i)
		f.Plugins[id] = testEntry(t, id, version, caps)
	}
	return f
}

// Helper processes: the test binary re-executed with helperEnv naming a mode.
const (
	helperEnv   = "CAPGATE_LOCK_HELPER"
	helperDir   = "CAPGATE_LOCK_DIR"
	helperID    = "CAPGATE_LOCK_ID"
	helperN     = "CAPGATE_LOCK_N"
	helperReady = "capgate-lock-helper-ready"
)

// helperCommand returns a command running test (a TestHelper* function) in a child process.
func helperCommand(t *testing.T, test string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// waitReady reads the child's stdout until it says it is ready.
func waitReady(t *testing.T, sc *bufio.Scanner) {
	t.Helper()
	for sc.Scan() {
		if sc.Text() == helperReady {
			return
		}
	}
	t.Fatalf("helper exited before it was ready: %v", sc.Err())
}

// helperMode returns the helper mode this process runs in, or skips the test when it is not a
// helper process.
func helperMode(t *testing.T, mode string) {
	if os.Getenv(helperEnv) != mode {
		t.Skip("helper process only")
	}
}

// parentGone reports whether the process that started this one has exited, so that a helper
// left behind by a crashed test stops on its own.
func parentGone(ppid int) bool { return os.Getppid() != ppid }
