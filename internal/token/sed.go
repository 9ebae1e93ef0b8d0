package token

import (
	"errors"
	"strings"
)

// sed is allowed under a command constraint only with scripts that neither write nor read
// files nor run commands of their own: GNU sed's w, W, r, R and e commands and the s
// command's w and e flags are refused, and so is a script read from a file (-f, --file),
// which capgate cannot see. The script is read as GNU sed reads it (compile.c): commands
// separated by ; or newlines, each with up to two addresses (a line number, $, first~step,
// /regex/ or \cregexc with I and M, +N and ~N as the second), any number of !, and the
// command. a, i and c take their text to the end of the line (a backslash continues it); b, t
// and T take a label, which is ended at the first blank or ; (where GNU may read further,
// capgate reads what follows as commands: it refuses more, never less). Anything it cannot
// read is refused.

var sedOpts = optTable{
	shortArg:      "efl",
	shortBool:     "nrEsuzb",
	shortOptional: "i",
	longArg:       []string{"expression", "file", "line-length"},
	longBool: []string{"quiet", "silent", "debug", "follow-symlinks", "in-place", "null-data", "zero-terminated",
		"posix", "regexp-extended", "sandbox", "separate", "unbuffered", "binary", "help", "version"},
}

// sedLongOf names sed's short options that take an argument by their long forms.
var sedLongOf = map[byte]string{'e': "expression", 'f': "file", 'l': "line-length"}

// errSedScript is any script capgate refuses.
var errSedScript = errors.New("sed script writes, reads or runs, or cannot be read")

// sedRule reads sed's options and its script.
func sedRule(args []string, _ bool) string {
	var scripts, operands []string
	hasExpr := false
	// value is an option's argument: val if it came in the same word (inline), else the
	// next argument, which the loop then skips; false when there is none.
	value := func(i *int, val string, inline bool) (string, bool) {
		if inline {
			return val, true
		}
		if *i+1 >= len(args) {
			return "", false
		}
		*i++
		return args[*i], true
	}
	// script takes the option named (long form) with its argument: a script read from a file
	// is refused, an expression kept.
	script := func(name, val string) bool {
		switch name {
		case "file":
			return false
		case "expression":
			scripts, hasExpr = append(scripts, val), true
		}
		return true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			full, takesArg, ok := sedOpts.long(name)
			if !ok {
				return RuleRunsByOpt
			}
			if takesArg {
				if val, ok = value(&i, val, hasVal); !ok {
					return RuleRunsByOpt
				}
			}
			if !script(full, val) {
				return RuleRunsByOpt
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := a[j]
				switch {
				case strings.IndexByte(sedOpts.shortBool, c) >= 0:
				case c == 'i':
					j = len(a) // -iSUFFIX
				case strings.IndexByte(sedOpts.shortArg, c) >= 0:
					val, ok := value(&i, a[j+1:], j+1 < len(a))
					if !ok || !script(sedLongOf[c], val) {
						return RuleRunsByOpt
					}
					j = len(a)
				default:
					return RuleRunsByOpt
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	if !hasExpr {
		if len(operands) == 0 {
			return "" // no script: sed fails and runs nothing
		}
		scripts = operands[:1]
	}
	if checkSedScript(strings.Join(scripts, "\n")) != nil {
		return RuleRunsByOpt
	}
	return ""
}

// checkSedScript returns errSedScript unless script is one GNU sed reads without a command
// or flag that writes, reads or runs.
func checkSedScript(script string) error {
	p := sedParser{s: script}
	return p.parse()
}

type sedParser struct {
	s     string
	i     int
	depth int
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) blanks() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sedParser) parse() error {
	for {
		for !p.eof() && strings.IndexByte(" \t\n\r;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			if p.depth != 0 {
				return errSedScript
			}
			return nil
		}
		if p.peek() == '#' {
			p.toEOL()
			continue
		}
		if err := p.addresses(); err != nil {
			return err
		}
		p.blanks()
		for p.peek() == '!' {
			p.i++
			p.blanks()
		}
		if p.eof() {
			return errSedScript
		}
		c := p.s[p.i]
		p.i++
		switch c {
		case '{':
			p.depth++
			continue
		case '}':
			p.depth--
			if p.depth < 0 {
				return errSedScript
			}
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'L', 'q', 'Q':
			p.blanks()
			p.digits()
		case ':', 'b', 't', 'T':
			p.blanks()
			for !p.eof() && strings.IndexByte(" \t\n\r;", p.s[p.i]) < 0 {
				p.i++
			}
			continue // what follows is read as commands
		case 'v':
			p.blanks()
			for !p.eof() && strings.IndexByte(" \t\n\r;}#", p.s[p.i]) < 0 {
				p.i++
			}
		case 'a', 'i', 'c':
			p.blanks()
			if p.peek() == '\\' {
				// a\ then a newline: the text is the next line. a\ then anything else,
				// blanks included: the text is the rest of this line, and the next line is
				// a command again (GNU sed runs "a\ \nw FILE"'s w).
				p.i++
				if p.peek() == '\n' {
					p.i++
				}
			}
			p.text()
			continue
		case 's':
			if err := p.subst(); err != nil {
				return err
			}
			continue
		case 'y':
			if err := p.twoParts(); err != nil {
				return err
			}
		default:
			// w W r R e, and anything else.
			return errSedScript
		}
		if err := p.endOfCommand(); err != nil {
			return err
		}
	}
}

// endOfCommand: blanks, then ; a newline } # or the end.
func (p *sedParser) endOfCommand() error {
	p.blanks()
	if p.eof() || strings.IndexByte(";\n\r}#", p.s[p.i]) >= 0 {
		return nil
	}
	return errSedScript
}

func (p *sedParser) toEOL() {
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
}

// text reads a, i and c's text: to an unescaped newline.
func (p *sedParser) text() {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch c {
		case '\\':
			if !p.eof() {
				p.i++
			}
		case '\n':
			return
		}
	}
}

func (p *sedParser) digits() bool {
	start := p.i
	for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// addresses reads none, one, or two addresses.
func (p *sedParser) addresses() error {
	ok, err := p.address(false)
	if err != nil || !ok {
		return err
	}
	p.blanks()
	if p.peek() != ',' {
		return nil
	}
	p.i++
	p.blanks()
	ok, err = p.address(true)
	if err == nil && !ok {
		err = errSedScript
	}
	return err
}

func (p *sedParser) address(second bool) (bool, error) {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		p.digits()
		if p.peek() == '~' {
			p.i++
			if !p.digits() {
				return false, errSedScript
			}
		}
		return true, nil
	case c == '$':
		p.i++
		return true, nil
	case second && (c == '+' || c == '~'):
		p.i++
		if !p.digits() {
			return false, errSedScript
		}
		return true, nil
	case c == '/':
		p.i++
		if err := p.until('/'); err != nil {
			return false, err
		}
	case c == '\\':
		p.i++
		delim, err := p.delimiter()
		if err != nil {
			return false, err
		}
		if err := p.until(delim); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	for p.peek() == 'I' || p.peek() == 'M' {
		p.i++
	}
	return true, nil
}

// delimiter reads the delimiter of s, y or \c: any character but a newline or backslash.
func (p *sedParser) delimiter() (byte, error) {
	if p.eof() || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
		return 0, errSedScript
	}
	d := p.s[p.i]
	p.i++
	return d, nil
}

// until reads up to and past an unescaped delim; a backslash escapes the next character
// and an unescaped newline is an error, as in GNU sed's match_slash.
func (p *sedParser) until(delim byte) error {
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.eof() {
				return errSedScript
			}
			p.i++
		case c == delim:
			return nil
		case c == '\n':
			return errSedScript
		}
	}
	return errSedScript
}

// twoParts reads a delimiter and the two parts it ends: s's regex and replacement, y's source
// and destination characters.
func (p *sedParser) twoParts() error {
	delim, err := p.delimiter()
	if err != nil {
		return err
	}
	if err := p.until(delim); err != nil {
		return err
	}
	return p.until(delim)
}

// subst reads s's regex, replacement and flags; the flags w and e are refused.
func (p *sedParser) subst() error {
	if err := p.twoParts(); err != nil {
		return err
	}
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case strings.IndexByte("gpiImM0123456789", c) >= 0:
			p.i++
		case c == ' ' || c == '\t':
			p.blanks()
			return p.endOfCommand()
		case strings.IndexByte(";\n\r}#", c) >= 0:
			return nil
		default:
			return errSedScript // w, e, or an unknown flag
		}
	}
	return nil
}
