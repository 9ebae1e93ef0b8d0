package token_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/capgate/capgate/internal/token"
)

// Issue 15, point 3: allowed_paths did not restrict the terminal's arguments at all. Under
// allowed_paths the cwd and every word of every program a command runs that can name a path
// is checked, resolved against the cwd, and shells and interpreters are refused, since the
// paths their code opens cannot be seen.
func TestAllowedPathsCommandWords(t *testing.T) {
	root := tree(t)
	ws := root + "/allowed"
	c := token.Constraints{AllowedPaths: []string{ws + "/**"}}
	if err := os.Symlink("sub", filepath.Join(ws, "sublink")); err != nil {
		t.Fatal(err)
	}
	run := func(cmd string, cwd *token.Value, dir string) token.Verdict {
		in := token.Input{Permission: "app.terminal.execute", Dir: dir,
			Commands: []token.Command{{Value: token.Value{Pointer: "/command", Text: cmd}, Cwd: cwd}}}
		if cwd != nil {
			in.Paths = []token.Value{*cwd}
		}
		return c.Check(in)
	}
	refused := []string{
		"cat /etc/passwd",
		"cat " + root + "/secret/passwd",
		"cat ../secret/passwd",
		"cat sub/../../secret/passwd",
		"cat out/passwd", // a link inside leading out
		"cat outfile",    // a link to a file outside
		"cat rel/passwd", // a relative link leading out
		"ls " + root,     // the parent
		"ls ..",          // the parent, relatively
		"cp file /etc/x", // a destination outside
		"dd if=file of=/etc/x",
		"cat file:///etc/passwd",
		"ls --color=auto --hide=x /",
		"sort --output=/etc/x file",
		"sort -o/etc/x file",
		"tar -xzC/etc -f a.tgz",
		"tar -C.. -xf a.tgz",
		"grep -r x -- /etc",
		"env -C /etc ls",
		"env -S 'cat /etc/passwd'",
		"timeout 5 cat /etc/passwd",
		"nice -n 5 env cat /etc/passwd",
		"find / -name passwd",
		"find . -exec cat /etc/passwd ';'",
		"find -L . -name x", // follows links to wherever they lead
		"find . -follow",
		"xargs cat", // the names come from the input
		"tar -T list -cf a.tar",
		"rsync --files-from=list . dst",
		"cpio -o",
		"zip -@ a.zip",
		// Shells and interpreters open paths no word shows, even with no command constraint.
		"sh -c 'cat /etc/passwd'",
		"sh",
		"python3 x.py",
		"awk 1 file",
		"bash script.sh",
	}
	for _, cmd := range refused {
		if v := run(cmd, nil, ws); v.OK {
			t.Errorf("%q: allowed", cmd)
		}
	}
	allowed := []string{
		"ls", "ls -la", "ls sub", "cat file", "cat sub/deep", "cat in/deep", "cat sublink/deep", "echo hello world",
		"ls -l -- sub", "cp file sub/copy", "dd if=file of=sub/x", "sort -o sorted file", "head -n 5 file",
		"/bin/ls sub", "env /bin/ls sub", "nice -n 5 /usr/bin/cat file", "find . -name '*.go'", "find sub -exec /bin/cat {} +",
		"timeout 5 ls " + ws + "/sub", "tar -C sub -xf a.tar", "grep -r x .", "cat newfile/not/yet/there",
	}
	for _, cmd := range allowed {
		if v := run(cmd, nil, ws); !v.OK {
			t.Errorf("%q: refused by %q", cmd, v.Rule)
		}
	}

	// The cwd: words are resolved against it, and it must be allowed itself.
	sub := &token.Value{Pointer: "/cwd", Text: "sub"}
	if v := run("cat deep", sub, ws); !v.OK {
		t.Errorf("cat deep in sub: %q", v.Rule)
	}
	if v := run("cat ../../secret/passwd", sub, ws); v.OK {
		t.Error("a relative word escaping the cwd was allowed")
	}
	if v := run("cat ../file", sub, ws); !v.OK {
		t.Errorf("cat ../file in sub: %q", v.Rule)
	}
	for _, cwd := range []string{"..", root + "/secret", "out", "rel"} {
		if v := run("ls", &token.Value{Pointer: "/cwd", Text: cwd}, ws); v.OK || v.Rule != token.RuleAllowedPaths {
			t.Errorf("cwd %q: %+v", cwd, v)
		}
	}
	// Without a folder to resolve relative words against, they are refused.
	if v := run("cat file", nil, ""); v.OK {
		t.Error("a relative word without a folder was allowed")
	}
	// The cwd checked is the cwd the provider gets, resolved.
	v := run("ls", &token.Value{Pointer: "/cwd", Text: "sublink"}, ws)
	if !v.OK || !reflect.DeepEqual(v.Resolved, []token.Value{{Pointer: "/cwd", Text: ws + "/sub"}}) {
		t.Errorf("resolved %+v", v)
	}
}

// Path values anywhere in the params are each checked, and each comes back resolved.
func TestAllowedPathsResolved(t *testing.T) {
	root := tree(t)
	c := token.Constraints{AllowedPaths: []string{root + "/allowed/**"}}
	in := token.Input{Dir: root + "/allowed", Paths: []token.Value{
		{Pointer: "/source", Text: "in/deep"},
		{Pointer: "/opts/path", Text: root + "/allowed//sub/../file"},
		{Pointer: "/paths/0", Text: "new"},
	}}
	v := c.Check(in)
	want := []token.Value{
		{Pointer: "/source", Text: root + "/allowed/sub/deep"},
		{Pointer: "/opts/path", Text: root + "/allowed/file"},
		{Pointer: "/paths/0", Text: root + "/allowed/new"},
	}
	if !v.OK || !reflect.DeepEqual(v.Resolved, want) {
		t.Fatalf("Check = %+v\nwant %+v", v, want)
	}
	in.Paths = append(in.Paths, token.Value{Pointer: "/destination", Text: "/etc/passwd"})
	if v := c.Check(in); v.OK || v.Rule != token.RuleAllowedPaths || len(v.Resolved) != 0 {
		t.Fatalf("one path outside: %+v", v)
	}
}
