package terminal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capgate/capgate/sdk"
)

// FuzzResolveDir checks that whatever cwd names, the folder a command would run in is the
// root or inside it, with no link left to resolve, and that a refusal is a cwd problem.
func FuzzResolveDir(f *testing.F) {
	base := f.TempDir()
	given := filepath.Join(base, "root")
	for _, d := range []string{"root/a/b", "root/c", "outside/x"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"root/up": "..", "root/out": filepath.Join(base, "outside"), "root/in": "a/b", "root/loop": "loop",
		"root/abs": "/", "root/c/back": "../a",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	aliasDir := filepath.Join(base, "alias")
	if err := os.Symlink(given, aliasDir); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"", ".", "a", "a/b", "in", "c/back", "up", "out", "out/x", "abs/etc", "loop", "..", "../outside",
		"/", given + "/a", aliasDir + "/a", aliasDir + "/../outside", "a/../../root/a", "a/\x00", "c/back/../../..",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cwd string) {
		for _, dir := range []string{given, aliasDir} {
			r, err := resolveRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolveDir(r, cwd)
			if err != nil {
				var e *sdk.Error
				if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams || len(e.Problems) != 1 || e.Problems[0].Path != "cwd" {
					t.Fatalf("resolveDir(%q) = %v, not a cwd problem", cwd, err)
				}
				continue
			}
			if got != r.real && !strings.HasPrefix(got, r.real+"/") {
				t.Fatalf("resolveDir(%q) = %q, outside %q", cwd, got, r.real)
			}
			if real, err := filepath.EvalSymlinks(got); err != nil || real != got {
				t.Fatalf("resolveDir(%q) = %q, which resolves to %q (%v)", cwd, got, real, err)
			}
			if fi, err := os.Stat(got); err != nil || !fi.IsDir() {
				t.Fatalf("resolveDir(%q) = %q, not a folder", cwd, got)
			}
		}
	})
}

// FuzzDecodeParams checks that the app's own params decoders never panic, refuse with
// InvalidParams, and hold to their bounds when they accept.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"command":"ls -l"}`, `{"command":"x","timeout":1.5}`, `{"command":"x","timeout":300000,"cwd":"a","stdin":"","background":true,"capture_output":false}`,
		`{"command":"x","timeout":1e400}`, `{"id":9007199254740991}`, `{"id":1,"input":"x","close":true}`, `{"count":100,"offset":100}`,
		`{"command":"x"} {}`, `[]`, `null`, ``, `{"command":null}`, `{"command":"x","extra":1}`, `{"id":-0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		check := func(err error) {
			var e *sdk.Error
			if err != nil && (!errors.As(err, &e) || e.Code != sdk.CodeInvalidParams) {
				t.Fatalf("error %v is not InvalidParams", err)
			}
		}
		p, err := decodeExec(raw)
		check(err)
		if err == nil {
			if p.Command == "" || len(p.Command) > MaxCommandBytes || p.Timeout <= 0 || p.Timeout > MaxTimeout ||
				len(p.Cwd) > MaxPathBytes || len(p.Stdin) > MaxStdinBytes {
				t.Fatalf("decodeExec accepted out of bounds params: %+v", p)
			}
		}
		id, err := decodeID(raw)
		check(err)
		if err == nil && (id < 0 || id > maxID) {
			t.Fatalf("decodeID accepted %d", id)
		}
		in, err := decodeInput(raw)
		check(err)
		if err == nil && (in.ID < 1 || in.ID > maxID || len(in.Input) > MaxStdinBytes) {
			t.Fatalf("decodeInput accepted %+v", in)
		}
		c, o, err := decodeHistory(raw)
		check(err)
		if err == nil && (c < 1 || c > MaxHistoryCount || o < 0 || o > MaxHistory) {
			t.Fatalf("decodeHistory accepted count %d offset %d", c, o)
		}
		check(decodeEmpty(raw))
		// What is accepted, JSON-encoded, stays within what the answer may hold.
		if s := validText(raw); !utf8.ValidString(s) {
			t.Fatal("validText left invalid UTF-8")
		}
		if _, err := json.Marshal(shorten(string(raw), 16)); err != nil {
			t.Fatal(err)
		}
		if s := shorten(validText(raw), MaxListedCommandBytes); len(s) > MaxListedCommandBytes || !utf8.ValidString(s) {
			t.Fatalf("shorten gave %d bytes", len(s))
		}
	})
}
