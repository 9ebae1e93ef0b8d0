package token

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command whose words take more lookups than the budget is refused, not left partly
// unchecked; within the budget the same words pass.
func TestCommandPathsBudget(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("d/", 10) + "f"
	if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(deep)), 0o755); err != nil {
		t.Fatal(err)
	}
	pats := resolvedPatterns([]string{ws + "/**"})
	invs, err := expandCommand("cat " + strings.Repeat(deep+" ", 10))
	if err != nil {
		t.Fatal(err)
	}
	if !commandPaths(pats, invs, ws, 200) {
		t.Fatal("refused within the budget")
	}
	if commandPaths(pats, invs, ws, 50) {
		t.Fatal("allowed past the budget")
	}
}
