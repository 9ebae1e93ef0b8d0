package apps

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// uiAutomation are import paths (and their subpackages) that drive a rendered surface: browser
// automation, webviews, GUI toolkits, synthetic input, and JavaScript in the host.
var uiAutomation = []string{
	"github.com/chromedp",
	"github.com/go-rod",
	"github.com/playwright-community",
	"github.com/tebeka/selenium",
	"github.com/sclevine/agouti",
	"github.com/webview",
	"github.com/wailsapp",
	"github.com/zserge/lorca",
	"github.com/go-vgo/robotgo",
	"github.com/micmonay/keybd_event",
	"github.com/go-ole",
	"github.com/lxn/win",
	"fyne.io",
	"gioui.org",
	"syscall/js",
}

// forbiddenText are calls into a rendered surface that no handler's code may spell, even
// through a route the import list does not know.
var forbiddenText = []string{"document.execCommand", "evaluate_script(", "EvaluateScript("}

// violations lists, for the Go files (tests excluded) under root, each import of a UI
// automation API and each string literal naming a forbidden call.
func violations(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range uiAutomation {
				if p == bad || strings.HasPrefix(p, bad+"/") {
					out = append(out, fset.Position(imp.Pos()).String()+": imports "+p)
				}
			}
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, bad := range forbiddenText {
			if strings.Contains(string(src), bad) {
				out = append(out, path+": names "+bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNoUIAutomation: no built-in app, and nothing in the handler SDK, can drive a rendered
// surface (the manifest document's Architectural Requirement).
func TestNoUIAutomation(t *testing.T) {
	for _, root := range []string{".", "../../sdk"} {
		for _, v := range violations(t, root) {
			t.Error(v)
		}
	}
}

// The check finds what it looks for: a handler that imports browser automation and one that
// spells a webview's editing command.
func TestNoUIAutomationFindsViolations(t *testing.T) {
	dir := t.TempDir()
	bad := map[string]string{
		"a/a.go": "package a\n\nimport _ \"github.com/chromedp/chromedp\"\n",
		"b/b.go": "package b\n\nimport js \"syscall/js\"\n\nvar _ = js.Global\n",
		"c/c.go": "package c\n\nconst s = `document.execCommand(\"bold\")`\n",
	}
	for name, src := range bad {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := violations(t, dir); len(got) != 3 {
		t.Fatalf("found %d violations, want 3: %v", len(got), got)
	}
}
