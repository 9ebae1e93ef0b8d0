package token

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Commands are split into words by the quoting rules of the POSIX shell and nothing else:
// single quotes keep everything literally; double quotes keep everything but a backslash
// before $ ` " \ or a newline; a backslash outside quotes keeps the next character. Nothing is
// expanded. capgate's terminal runs the words as an argument vector without a shell, so a
// command that a shell would read differently, one with an unquoted operator
// (; & | < > ( ) ` $) or a newline, or with $ or ` inside double quotes, cannot be checked
// word by word and is refused by every token that constrains commands.
//
// A string handed to a shell (sh -c "...", eval) is split by the same rules and refused also
// for what a shell would expand there: an unquoted * ? [ ] { } ~, and a word starting with an
// unquoted # (a comment) or = (zsh's path expansion).

// Errors of SplitCommand. They name the rule, never the command.
var (
	ErrCommandEmpty     = errors.New("command: empty")
	ErrCommandText      = errors.New("command: contains NUL or invalid UTF-8, or is too long")
	ErrCommandQuote     = errors.New("command: unterminated quote or trailing backslash")
	ErrCommandOperator  = errors.New("command: unquoted shell operator or newline (the terminal runs no shell)")
	ErrCommandExpansion = errors.New("command: $ or ` inside double quotes")
	ErrCommandShellGlob = errors.New("command: a shell string with an unquoted glob, brace, tilde, comment or = word")
	ErrCommandTooMany   = errors.New("command: too many words")
	ErrCommandWrapper   = errors.New("command: a wrapper with an option it does not know, or without its command")
	ErrCommandTooNested = errors.New("command: wrappers nested too deeply")
)

// SplitCommand splits s into its argument vector by POSIX shell quoting, or fails with one of
// the ErrCommand errors. It never expands anything.
func SplitCommand(s string) ([]string, error) { return split(s, false) }

// split splits s; shell is set for strings a shell will read (sh -c, eval).
func split(s string, shell bool) ([]string, error) {
	if len(s) > MaxCommandBytes || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return nil, ErrCommandText
	}
	var (
		argv   []string
		cur    strings.Builder
		inWord bool
	)
	end := func() error {
		if inWord {
			if len(argv) >= MaxArgs {
				return ErrCommandTooMany
			}
			argv = append(argv, cur.String())
			cur.Reset()
			inWord = false
		}
		return nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if err := end(); err != nil {
				return nil, err
			}
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, ErrCommandQuote
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			inWord = true
			i++
			for {
				if i >= len(s) {
					return nil, ErrCommandQuote
				}
				d := s[i]
				if d == '"' {
					i++
					break
				}
				switch d {
				case '\\':
					if i+1 >= len(s) {
						return nil, ErrCommandQuote
					}
					switch n := s[i+1]; n {
					case '$', '`', '"', '\\':
						cur.WriteByte(n)
					case '\n':
						// A line continuation: removed.
					default:
						cur.WriteByte('\\')
						i--
					}
					i += 2
				case '$', '`':
					return nil, ErrCommandExpansion
				default:
					cur.WriteByte(d)
					i++
				}
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, ErrCommandQuote
			}
			if s[i+1] == '\n' || s[i+1] == '\r' {
				return nil, ErrCommandOperator
			}
			cur.WriteByte(s[i+1])
			inWord = true
			i += 2
		case strings.IndexByte(";&|<>()`$\n\r", c) >= 0:
			return nil, ErrCommandOperator
		case shell && strings.IndexByte("*?[]{}~", c) >= 0,
			shell && !inWord && (c == '#' || c == '='):
			return nil, ErrCommandShellGlob
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, ErrCommandEmpty
	}
	return argv, nil
}

// QuoteCommand returns a command that SplitCommand splits into argv: each word as it is when
// it holds only characters no shell treats specially, else in single quotes.
func QuoteCommand(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+:,./-") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// programName returns the program a word names: its base name, so /bin/rm, ./rm and
// /usr/bin/../bin/rm are all rm.
func programName(word string) string {
	w := strings.TrimRight(word, "/")
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		return w[i+1:]
	}
	return w
}
