package toolserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/toolserver"
)

// A stdio tool server runs in a sandbox of its own: it reads the folders bound for it and
// nothing else of the host (capgate's data folder, another folder, /etc/shadow), writes only
// a read-write binding, and without a sandbox it is not started at all.
func TestStdioServerSandboxed(t *testing.T) {
	box := sandboxtest.Open(t)
	records, bound, secretDir := t.TempDir(), t.TempDir(), t.TempDir()
	boundFile, secret := filepath.Join(bound, "data"), filepath.Join(secretDir, "capgate.key")
	for _, f := range []string{boundFile, secret} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probes := boundFile + "," + secret + ",/etc/shadow,/root/.ssh/id_ed25519"
	c := toolserver.Config{Name: "probe", Command: testServer, Args: []string{"-record", records, "-probe", probes},
		Bind: []toolserver.Bind{{Path: bound}, {Path: records, RW: true}}}
	ctx := context.Background()
	s, err := toolserver.Connect(ctx, c, box, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(records, "server-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d records, want 1", len(files))
	}
	raw, _ := os.ReadFile(files[0])
	var rec struct{ Read map[string]bool }
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{boundFile: true, secret: false, "/etc/shadow": false, "/root/.ssh/id_ed25519": false}
	for p, ok := range want {
		if got, seen := rec.Read[p]; !seen || got != ok {
			t.Errorf("the server could read %s: %v, want %v", p, got, ok)
		}
	}
	if _, err := toolserver.Connect(ctx, c, nil, "test", nil); !errors.Is(err, toolserver.ErrNoSandbox) {
		t.Errorf("a stdio server without a sandbox: %v", err)
	}
}
