package python

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// bigLiteral matches what would let one step of a fuzzed script allocate hundreds of MiB in
// the fuzzing process itself ("x" * 999999999, 1 << 28): the engine leaves memory to the
// sandbox process, which the fuzz target does not start.
var bigLiteral = regexp.MustCompile(`[0-9]{7,}|0[xXoObB][0-9a-fA-F_]{6,}|<<|\*\s*\*`)

// FuzzExecute runs arbitrary source through the engine with small limits: it must never
// panic, must end within a bounded time, and must keep its output, steps and error within
// their bounds.
func FuzzExecute(f *testing.F) {
	for _, s := range []string{
		"print(\"Hello from Python!\")\nresult = 2 + 2\nprint(\"Result: %d\" % result)",
		"while True:\n    pass\n",
		"def f(n):\n    return f(n + 1)\nf(0)\n",
		"for i in range(100):\n    print(\"x\" * 100)\n",
		"load(\"x.star\", \"y\")",
		"x = = 1",
		"print(json.decode(\"[[[[1]]]]\"), json.encode({\"a\": (1, 2)}), math.floor(2.5))",
		"x = []\nx.append(x)\nprint(x, json.encode(x))",
		"s = set([1, 2])\nd = {}\nd[(1, (2, 3))] = s\nprint(d)",
		"def g():\n    return sorted([3, 1], key=lambda x: -x)\nprint(g())",
		"fail(\"boom\")",
		"x = \"\\xff\"\nprint(x)",
		"if True:\n\tprint(1)\n  print(2)",
		"[x for x in range(10) if x % 2]",
		"((((((((((((((((((((1))))))))))))))))))))",
		"print(1.0 / 0)",
		"def f():\n    x = 1\n    def g():\n        return x\n    return g()\nprint(f())",
	} {
		f.Add(s)
	}
	lim := engineLimits{steps: 20000, depth: 50, output: 4096, time: 2 * time.Second}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > MaxSourceBytes || bigLiteral.MatchString(src) {
			t.Skip()
		}
		var out bytes.Buffer
		start := time.Now()
		res := runEngine("<fuzz>", []byte(src), lim, &out)
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("ran %v", d)
		}
		if out.Len() > lim.output {
			t.Fatalf("%d bytes of output", out.Len())
		}
		if res.Steps > lim.steps {
			t.Fatalf("%d steps", res.Steps)
		}
		switch res.Status {
		case statusSuccess:
			if res.Error != nil {
				t.Fatalf("success with error %q", *res.Error)
			}
		case statusError, statusTimeout:
			if res.Error == nil || len(*res.Error) > MaxErrorBytes || *res.Error == "" {
				t.Fatalf("status %s without a bounded error", res.Status)
			}
		default:
			t.Fatalf("status %q", res.Status)
		}
		if res.Truncated && out.Len() < lim.output-(utf8.UTFMax-1) {
			t.Fatalf("truncated at %d bytes, before the limit", out.Len())
		}
	})
}

// FuzzTextDepth checks the nesting scan json.decode is guarded by against encoding/json's
// own reading of valid JSON.
func FuzzTextDepth(f *testing.F) {
	for _, s := range []string{`[]`, `{"a": [1, {"b": "[[["}]}`, `"\"[["`, `[[[[[]]]]]`, `{"k\\": "]"}`, `[`, `]]]`, `"\\\"["`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := textDepth(s)
		if got < 0 {
			t.Fatalf("depth %d", got)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(s))
		depth, want := 0, 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				return
			}
			switch tok {
			case json.Delim('['), json.Delim('{'):
				depth++
				want = max(want, depth)
			case json.Delim(']'), json.Delim('}'):
				depth--
			}
		}
		if got != want {
			t.Fatalf("textDepth %d, encoding/json %d", got, want)
		}
	})
}

// FuzzScriptPath checks that a path param either is refused or names a .star or .py file
// inside the scripts folder, by its text.
func FuzzScriptPath(f *testing.F) {
	dir := f.TempDir()
	s, err := openScripts(dir)
	if err != nil {
		f.Fatal(err)
	}
	defer s.root.Close()
	for _, p := range []string{
		"hello.star", "a/b.py", "../x.star", "/etc/x.py", dir + "/a.star", dir + "/../x.star", dir + "x/a.star",
		"a/../../x.star", "./.star", "..star", "...py", "a\x00.py", "a\\..\\b.py", "//a.star", dir + "//..//" + filepath.Base(dir) + "/a.star",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		name, err := s.resolve(p)
		if err != nil {
			return
		}
		if filepath.IsAbs(name) || name == "." || name == ".." || strings.HasPrefix(name, "../") || name != filepath.Clean(name) {
			t.Fatalf("%q resolved to %q", p, name)
		}
		if !strings.HasSuffix(name, ".star") && !strings.HasSuffix(name, ".py") {
			t.Fatalf("%q resolved to %q, not a script name", p, name)
		}
		rel, err := filepath.Rel(s.dir, filepath.Join(s.dir, name))
		if err != nil || rel != name {
			t.Fatalf("%q resolved to %q, outside the folder", p, name)
		}
	})
}
