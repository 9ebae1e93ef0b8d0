package ipc

import (
	"strings"
	"testing"
)

// grammarSeeds are the edges of every grammar: empty, one byte, the length bounds and one
// past them, each byte class's ends and neighbours, a newline at the end (which `$` must not
// let through), non-ASCII letters and invalid UTF-8.
func grammarSeeds() []string {
	s := []string{"", "a", "A", "0", "_", ".", ":", "-", "a-", "a:", "a.b", "a_b", "aB", "Ab", "0a", "-a", ".a",
		"a\n", "a\x00", "a b", "é", "aé", "a\xff", "\xc3", "cgt1.abc-DEF_0", "z", "{", "`", "@", "[", "/", "9",
		"req-1", "settings", "get_setting", "system.settings.get", "ünïcode"}
	for _, n := range []int{127, 128, 129, 252, 253, 254, 511, 512, 513} {
		s = append(s, strings.Repeat("a", n), "a"+strings.Repeat("0", n-1), strings.Repeat("a", n-1)+"\n")
	}
	return s
}

// Every grammar's MatchString says what its regular expression says.
func FuzzGrammars(f *testing.F) {
	for _, s := range grammarSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range []*grammar{requestIDPattern, appPattern, methodPattern, tokenPattern} {
			if got, want := g.MatchString(s), g.re.MatchString(s); got != want {
				t.Fatalf("%s on %q: MatchString %v, the expression %v", g, s, got, want)
			}
		}
	})
}

func TestGrammarsMatchTheirExpressions(t *testing.T) {
	for _, s := range grammarSeeds() {
		for _, g := range []*grammar{requestIDPattern, appPattern, methodPattern, tokenPattern} {
			if got, want := g.MatchString(s), g.re.MatchString(s); got != want {
				t.Errorf("%s on %q: MatchString %v, the expression %v", g, s, got, want)
			}
		}
	}
	// Every byte, alone and after a valid first byte.
	for b := 0; b < 256; b++ {
		for _, s := range []string{string([]byte{byte(b)}), "a" + string([]byte{byte(b)})} {
			for _, g := range []*grammar{requestIDPattern, appPattern, methodPattern, tokenPattern} {
				if got, want := g.MatchString(s), g.re.MatchString(s); got != want {
					t.Errorf("%s on %q: MatchString %v, the expression %v", g, s, got, want)
				}
			}
		}
	}
}

func BenchmarkTokenGrammar(b *testing.B) {
	tok := "cgt1." + strings.Repeat("AbC-dEf_012.", 40)
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			if !tokenPattern.MatchString(tok) {
				b.Fatal("no match")
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			if !tokenPattern.re.MatchString(tok) {
				b.Fatal("no match")
			}
		}
	})
}
