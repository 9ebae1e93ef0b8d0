package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The session itself is tested end to end, with the real binary, in cmd/capgate
// (TestDemo); these are the parts that need no gateway.

func TestFresh(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want bool
	}{
		{filepath.Join(dir, "new"), true},
		{t.TempDir(), true},
		{full, false},
		{file, false},
	} {
		if err := fresh(c.dir); (err == nil) != c.want || err != nil && !errors.Is(err, ErrNotFresh) {
			t.Errorf("fresh(%s) = %v, want fresh %v", c.dir, err, c.want)
		}
	}
	// Run refuses a folder that holds something before it starts anything.
	if _, err := Run(context.Background(), Options{Exe: "/nonexistent", DataDir: full}); !errors.Is(err, ErrNotFresh) {
		t.Errorf("Run on a full folder: %v", err)
	}
	if _, err := Run(context.Background(), Options{DataDir: filepath.Join(dir, "new")}); err == nil {
		t.Error("Run without an executable did not fail")
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{"one two three", []string{"one two", "three"}},
		{"a  verylongword b", []string{"a", "verylongword", "b"}},
	} {
		if got := wrap(c.in, 8); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
