package token_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/token"
)

// tree makes, in a temporary folder:
//
//	root/allowed/file
//	root/allowed/sub/deep
//	root/secret/passwd
//	root/allowed/out      -> root/secret           (a link leading out)
//	root/allowed/outfile  -> root/secret/passwd
//	root/allowed/rel      -> ../secret             (a relative link leading out)
//	root/allowed/in       -> sub                   (a link staying in)
//	root/link-to-allowed  -> root/allowed
//	root/allowed/loop     -> loop
func tree(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"allowed/sub", "secret", "Allowed2"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"allowed/file", "allowed/sub/deep", "secret/passwd"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"allowed/out":     filepath.Join(root, "secret"),
		"allowed/outfile": filepath.Join(root, "secret/passwd"),
		"allowed/rel":     "../secret",
		"allowed/in":      "sub",
		"link-to-allowed": filepath.Join(root, "allowed"),
		"allowed/loop":    "loop",
	}
	for from, to := range links {
		if err := os.Symlink(to, filepath.Join(root, from)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// checkPath checks path, a string or a list of strings, as the path values of a call.
func checkPath(patterns []string, dir string, path any) (bool, string) {
	c := token.Constraints{AllowedPaths: patterns}
	in := token.Input{Permission: "fs.read", Dir: dir}
	switch p := path.(type) {
	case string:
		in.Paths = []token.Value{{Pointer: "/path", Text: p}}
	case []string:
		for i, s := range p {
			in.Paths = append(in.Paths, token.Value{Pointer: fmt.Sprintf("/paths/%d", i), Text: s})
		}
	}
	v := c.Check(in)
	return v.OK, v.Rule
}

func TestAllowedPaths(t *testing.T) {
	root := tree(t)
	r := func(p string) string { return root + p }
	all := []string{r("/allowed/**")}
	cases := []struct {
		name     string
		patterns []string
		dir      string
		path     any
		want     bool
	}{
		{"file inside", all, "", r("/allowed/file"), true},
		{"folder itself", all, "", r("/allowed"), true},
		{"deep, not yet there", all, "", r("/allowed/new/dir/file"), true},
		{"trailing slash", all, "", r("/allowed/sub/"), true},
		{"double slash", all, "", r("/allowed//sub///deep"), true},
		{"dot segment", all, "", r("/allowed/./sub/./deep"), true},
		{"link staying inside", all, "", r("/allowed/in/deep"), true},
		{"relative with base", all, r("/allowed"), "sub/deep", true},
		{"sibling", all, "", r("/secret/passwd"), false},
		{"dot-dot out", all, "", r("/allowed/../secret/passwd"), false},
		{"dot-dot out of a missing folder", all, "", r("/allowed/nothere/../../secret/passwd"), false},
		{"dot-dot at the root", all, "", "/../../../../" + r("/secret/passwd"), false},
		{"prefix is not a folder", all, "", r("/allowedx/file"), false},
		{"absolute link out", all, "", r("/allowed/out/passwd"), false},
		{"link to a file out", all, "", r("/allowed/outfile"), false},
		{"relative link out", all, "", r("/allowed/rel/passwd"), false},
		// Lexically this is /allowed/secret/passwd; the kernel goes to root/secret/passwd.
		{"link, then dot-dot", all, "", r("/allowed/out/../secret/passwd"), false},
		{"link out, then dot-dot back in", all, "", r("/allowed/out/../allowed/file"), true},
		{"link to a folder, then dot-dot stays where the link goes", all, "", r("/allowed/in/../file"), true},
		{"link loop", all, "", r("/allowed/loop/x"), false},
		{"relative without base", all, "", "allowed/file", false},
		{"relative base not absolute", all, "rel", "file", false},
		{"relative escaping the base", all, r("/allowed"), "../secret/passwd", false},
		{"NUL", all, "", r("/allowed/file\x00/../../secret"), false},
		{"invalid UTF-8", all, "", r("/allowed/\xff"), false},
		{"case differs", all, "", r("/ALLOWED/file"), false},
		{"list, all inside", all, "", []string{r("/allowed/file"), r("/allowed/sub")}, true},
		{"list, one outside", all, "", []string{r("/allowed/file"), r("/secret/passwd")}, false},
		{"pattern through a link", []string{r("/link-to-allowed/**")}, "", r("/allowed/file"), true},
		{"path through a link", all, "", r("/link-to-allowed/file"), true},
		{"star: directly under", []string{r("/allowed/*")}, "", r("/allowed/file"), true},
		{"star: not the folder", []string{r("/allowed/*")}, "", r("/allowed"), false},
		{"star: not deeper", []string{r("/allowed/*")}, "", r("/allowed/sub/deep"), false},
		{"star: not through a link out", []string{r("/allowed/*")}, "", r("/allowed/outfile"), false},
		{"star inside a segment", []string{r("/allowed/f*e")}, "", r("/allowed/file"), true},
		{"star inside a segment, no match", []string{r("/allowed/f*x")}, "", r("/allowed/file"), false},
		{"exact", []string{r("/allowed/file")}, "", r("/allowed/file"), true},
		{"exact is not a folder", []string{r("/allowed/sub")}, "", r("/allowed/sub/deep"), false},
		{"unclean pattern never matches", []string{r("/allowed/../secret/**")}, "", r("/secret/passwd"), false},
		{"relative pattern never matches", []string{"secret/**"}, root, "secret/passwd", false},
		{"root tree", []string{"/**"}, "", r("/secret/passwd"), true},
		{"root alone", []string{"/"}, "", r("/secret/passwd"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, rule := checkPath(c.patterns, c.dir, c.path)
			if ok != c.want {
				t.Fatalf("Check = %v (%s), want %v", ok, rule, c.want)
			}
			if !ok && rule != token.RuleAllowedPaths {
				t.Errorf("rule = %q, want %q", rule, token.RuleAllowedPaths)
			}
		})
	}
}

// The token document's example: /home/* is anything directly under /home.
func TestAllowedPathsDocument(t *testing.T) {
	home := []string{"/home/*"}
	for p, want := range map[string]bool{
		"/home/user":                    true,
		"/home/user/":                   true,
		"/home":                         false,
		"/home/user/notes.txt":          false,
		"/home/user/../../etc/passwd":   false,
		"/home/../etc":                  false,
		"/home/./user":                  true,
		"/homer":                        false,
		"/etc/passwd":                   false,
		"/HOME/user":                    false,
		"/home/user/../other":           true,
		"/home/user/../../home/someone": true,
	} {
		if _, err := os.Lstat("/home"); err != nil {
			t.Skip("no /home")
		}
		if ok, _ := checkPath(home, "", p); ok != want {
			t.Errorf("/home/* and %q: %v, want %v", p, ok, want)
		}
	}
}

func TestResolvePath(t *testing.T) {
	root := tree(t)
	for in, want := range map[string]string{
		root + "/allowed/out/passwd":        root + "/secret/passwd",
		root + "/allowed/rel/../allowed/x/": root + "/allowed/x",
		root + "/allowed/file/x":            root + "/allowed/file/x",
		"/":                                 "/",
		"//":                                "/",
		"/..":                               "/",
	} {
		got, err := token.ResolvePath(in, "")
		if err != nil || got != want {
			t.Errorf("ResolvePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"rel", "/a\x00b", "/\xff", root + "/allowed/loop"} {
		if _, err := token.ResolvePath(in, ""); err == nil {
			t.Errorf("ResolvePath(%q) succeeded", in)
		}
	}
}

func TestAllowedPathsUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every folder")
	}
	root := tree(t)
	locked := filepath.Join(root, "allowed", "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "secret"), filepath.Join(locked, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	if ok, _ := checkPath([]string{root + "/allowed/**"}, "", locked+"/x/passwd"); ok {
		t.Error("a path through a folder that cannot be read was allowed")
	}
}
