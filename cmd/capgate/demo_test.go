package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// TestDemo runs capgate demo as a person would: the real binary, which starts its own
// gateway as a child process and drives it through every step.
func TestDemo(t *testing.T) {
	sandboxtest.Open(t) // the demo runs a python script
	t.Run("told", func(t *testing.T) {
		t.Parallel()
		data := filepath.Join(t.TempDir(), "demo")
		r := capgate(t, "", nil, "demo", "--data", data)
		mustCode(t, r, 0)
		for _, want := range []string{
			"1. Start a fresh gateway",
			"issued at once, with no one asked",      // 3: fs.read needs no consent
			"The agent sees draft.txt, hello.star",   // 4: list_directory
			"rule allowed_paths",                     // 4: a path outside the workspace
			"The person approved it",                 // 5, 6, 7, 9: the person approves from the CLI
			"notes.txt is back as it was",            // 5: write, then undo
			"rule denied_commands",                   // 6: rm -fr refused by the constraint
			"CAPABILITY_DENIED",                      //
			"step 5: the token's constraints",        // 6: explain's trace
			"notes.txt is intact",                    //
			`It printed "hello"`,                     // 6: echo ran
			"draft.txt is gone",                      // 7: the delete that waited
			"123 + 456 * 2 = 1035",                   // 8
			"The script printed: Hello from Python!", // 9
			"All 10 steps went as scripted.",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the demo does not say %q", want)
			}
		}
		if !regexp.MustCompile(`(?m)^\s+intact$`).MatchString(r.stdout) {
			t.Error("the demo does not show audit verify's verdict")
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
		// --data is kept: its log verifies, its workspace shows what the agent did.
		mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
		if b, err := os.ReadFile(filepath.Join(data+"-workspace", "notes.txt")); err != nil || !strings.HasPrefix(string(b), "Buy milk.") {
			t.Errorf("notes.txt after the demo: %q %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(data+"-workspace", "draft.txt")); !os.IsNotExist(err) {
			t.Errorf("draft.txt survived the demo: %v", err)
		}
		// A folder that holds something is refused before anything starts.
		r = capgate(t, "", nil, "demo", "--data", data)
		mustCode(t, r, 2)
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		tmp := t.TempDir()
		r := capgate(t, "", []string{"TMPDIR=" + tmp}, "demo", "--json")
		mustCode(t, r, 0)
		var rep struct {
			OK      bool
			DataDir string `json:"data_dir"`
			Kept    bool
			Steps   []struct {
				Step     int
				OK       bool
				Requests []struct {
					App, Method string
					Status      string
					ErrorCode   string `json:"error_code"`
				}
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("demo --json: %v\n%s", err, r.stdout)
		}
		if !rep.OK || rep.Kept || len(rep.Steps) != 10 {
			t.Fatalf("demo --json: ok %v, kept %v, %d steps", rep.OK, rep.Kept, len(rep.Steps))
		}
		denied := false
		for _, x := range rep.Steps[5].Requests {
			denied = denied || x.Method == "execute_command" && x.ErrorCode == "CAPABILITY_DENIED"
		}
		if !denied {
			t.Errorf("step 6 has no refused command: %+v", rep.Steps[5].Requests)
		}
		if secret := regexp.MustCompile(`cgk_[A-Za-z0-9_-]{16}|cgt1\.[A-Za-z0-9_-]{40}`).FindString(r.stdout); secret != "" {
			t.Errorf("the report holds a key or a token: %s", secret)
		}
		// The temporary data folder is gone.
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("the temporary data folder was left: %v", entries)
		}
	})
}
