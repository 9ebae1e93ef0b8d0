package token

import (
	"strings"
	"testing"
)

// FuzzSedScript: reading any script never panics, and the parser keeps its place: after a
// script it accepts, a w command on a line of its own is always refused.
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{
		"p", "s/a/b/g", "1,3d", "/x/I,+2{p;d}", "$!N", ":a;N;$!ba;s/\\n/ /g", "1i\\\nhello", "a text",
		"y/abc/xyz/", "s|a\\|b|c|2p", "\\%x%d", "0~3{=;}", "# comment\np", "l 5", "q5", "v 4.2", "b end",
		"s/[/]/x/", "{\n}", "c\\", "s/a/b/w x", "e ls", "s/a/b/ e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkSedScript(s) != nil || strings.HasSuffix(s, "\\") {
			return
		}
		if checkSedScript(s+"\nw x") == nil {
			t.Fatalf("%q accepted, and so was a w after it", s)
		}
		if checkSedScript(s+"\ne ls") == nil {
			t.Fatalf("%q accepted, and so was an e after it", s)
		}
	})
}

// a\ followed by blanks and a newline takes its text from its own line, as GNU sed does, so
// the next line is a command again: "a\ \nw FILE" writes FILE, and is refused.
func TestSedTextAfterBackslashBlank(t *testing.T) {
	for _, s := range []string{"a\\ \nw /tmp/x", "a\\\t\nw /tmp/x", "i\\  \ne ls", "c\\ \nW /tmp/x", "1a\\ x\nw /tmp/x"} {
		if checkSedScript(s) == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for _, s := range []string{"a\\\nw /tmp/x", "a\\\n  hello", "a\\ text", "a text"} {
		if err := checkSedScript(s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
}
