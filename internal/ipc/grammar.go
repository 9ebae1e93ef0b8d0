package ipc

import "regexp"

// grammar is the grammar of one envelope field. The regular expression states it: errors and
// the OpenAPI description quote it. MatchString checks the same grammar byte by byte, because
// every call checks its token, and the regexp engine takes microseconds on a token of a few
// hundred bytes. Every grammar is ASCII only, so bytes and characters count the same; the
// fuzz target FuzzGrammars holds MatchString equal to the expression.
type grammar struct {
	re       *regexp.Regexp
	first    *[256]bool // the first byte's class; nil: the same as the rest
	rest     *[256]bool
	min, max int // length bounds in bytes; max 0: none
}

// class is the set of the bytes in ranges, each a pair of inclusive bounds.
func class(ranges ...byte) *[256]bool {
	var c [256]bool
	for i := 0; i+1 < len(ranges); i += 2 {
		for b := int(ranges[i]); b <= int(ranges[i+1]); b++ {
			c[b] = true
		}
	}
	return &c
}

// MatchString reports whether s is in the grammar.
func (g *grammar) MatchString(s string) bool {
	if len(s) < g.min || (g.max > 0 && len(s) > g.max) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := g.rest
		if i == 0 && g.first != nil {
			c = g.first
		}
		if !c[s[i]] {
			return false
		}
	}
	return true
}

// String returns the regular expression.
func (g *grammar) String() string { return g.re.String() }

var (
	requestIDPattern = &grammar{re: regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`),
		rest: class('A', 'Z', 'a', 'z', '0', '9', '_', '_', '.', '.', ':', ':', '-', '-'), min: 1, max: 128}
	appPattern = &grammar{re: regexp.MustCompile(`^[a-z][a-z0-9._-]{0,252}$`),
		first: class('a', 'z'), rest: class('a', 'z', '0', '9', '.', '.', '_', '_', '-', '-'), min: 1, max: 253}
	methodPattern = &grammar{re: regexp.MustCompile(`^[a-z][a-z0-9_.]{0,511}$`),
		first: class('a', 'z'), rest: class('a', 'z', '0', '9', '_', '_', '.', '.'), min: 1, max: 512}
	tokenPattern = &grammar{re: regexp.MustCompile(`^[A-Za-z0-9_.-]+$`),
		rest: class('A', 'Z', 'a', 'z', '0', '9', '_', '_', '.', '.', '-', '-'), min: 1}
)
