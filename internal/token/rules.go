package token

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// A denied_commands or denied_patterns entry ("rm -rf", "shutdown", "git push --force") is a
// program and the flags and arguments that, all present, make a command denied. The program
// is compared by base name in lower case. A command's flags are read up to "--": a cluster
// of short flags is the set of its letters (-rf, -fr, -r -f and -rfv all hold r and f); a long
// flag matches itself or any abbreviation GNU getopt_long would accept (--rec for
// --recursive); the other words are its arguments, compared exactly, or as clean paths when
// the entry's argument is an absolute path (// and /. are /). The order does not matter.
//
// Some programs spell one flag several ways. flagAliases says which, per program:
//
//	rm              -R = -r, --recursive = -r, --force = -f, --dir = -d
//	cp              -R = -r, --recursive = -r, --force = -f
//	chmod chown chgrp   --recursive = -R
//
// A command whose arguments are not all known (xargs adds more when it runs) is denied by an
// entry naming its program whatever the entry's flags. Every program a command reaches
// through wrappers is checked, and so is every tail of a wrapper's arguments that starts with
// a word that is not an option, in case a wrapper option was misread.
type flagAlias struct {
	short map[byte]byte
	long  map[string]byte
}

var flagAliases = map[string]flagAlias{
	"rm":    {short: map[byte]byte{'R': 'r'}, long: map[string]byte{"recursive": 'r', "force": 'f', "dir": 'd'}},
	"cp":    {short: map[byte]byte{'R': 'r'}, long: map[string]byte{"recursive": 'r', "force": 'f'}},
	"chmod": {long: map[string]byte{"recursive": 'R'}},
	"chown": {long: map[string]byte{"recursive": 'R'}},
	"chgrp": {long: map[string]byte{"recursive": 'R'}},
}

// denyRule is a parsed denied entry.
type denyRule struct {
	program string   // lower case base name
	shorts  []byte   // short flags, aliases applied
	longs   []string // long flags without "--", "=value" kept
	args    []string // other words
}

func parseDenyRule(entry string) (denyRule, bool) {
	argv, err := SplitCommand(entry)
	if err != nil || len(entry) > MaxEntryBytes {
		return denyRule{}, false
	}
	r := denyRule{program: strings.ToLower(programName(argv[0]))}
	if r.program == "" {
		return denyRule{}, false
	}
	w := readWords(r.program, argv[1:])
	r.shorts, r.longs, r.args = w.shorts, w.longs, w.args
	return r, true
}

// words are a command's arguments sorted into flags and other words.
type words struct {
	shorts []byte
	longs  []string
	args   []string
}

func readWords(program string, argv []string) words {
	var w words
	alias := flagAliases[program]
	flags := true
	for _, a := range argv {
		switch {
		case flags && a == "--":
			flags = false
		case flags && strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a[2:], "=")
			if c, ok := aliasLong(alias, name); ok {
				w.shorts = append(w.shorts, c)
			} else {
				w.longs = append(w.longs, a[2:])
			}
		case flags && len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				c := a[j]
				if to, ok := alias.short[c]; ok {
					c = to
				}
				w.shorts = append(w.shorts, c)
			}
		default:
			w.args = append(w.args, a)
		}
	}
	return w
}

// aliasLong maps a long flag, or an abbreviation of it, to its short alias.
func aliasLong(a flagAlias, name string) (byte, bool) {
	if name == "" {
		return 0, false
	}
	for long, c := range a.long {
		if strings.HasPrefix(long, name) {
			return c, true
		}
	}
	return 0, false
}

// matches reports whether inv is denied by r.
func (r denyRule) matches(argv []string, argsOpen bool) bool {
	if len(argv) == 0 || strings.ToLower(programName(argv[0])) != r.program {
		return false
	}
	if argsOpen {
		return true
	}
	w := readWords(r.program, argv[1:])
	for _, c := range r.shorts {
		if !slices.Contains(w.shorts, c) {
			return false
		}
	}
	for _, l := range r.longs {
		if !slices.ContainsFunc(w.longs, func(cl string) bool { return longMatch(l, cl) }) {
			return false
		}
	}
	for _, a := range r.args {
		if !slices.ContainsFunc(w.args, func(ca string) bool { return argMatch(a, ca) }) {
			return false
		}
	}
	return true
}

// longMatch reports whether the command's long flag cmd is the entry's long flag entry or an
// abbreviation of it with the same value.
func longMatch(entry, cmd string) bool {
	en, ev, ehas := strings.Cut(entry, "=")
	cn, cv, chas := strings.Cut(cmd, "=")
	if cn == "" || !strings.HasPrefix(en, cn) {
		return false
	}
	return !ehas || chas && ev == cv
}

func argMatch(entry, cmd string) bool {
	if entry == cmd {
		return true
	}
	return strings.HasPrefix(entry, "/") && strings.HasPrefix(cmd, "/") && path.Clean(cmd) == path.Clean(entry)
}

// denied reports whether any of the entries denies the command's invocations.
func denied(entries []string, invs []invocation) bool {
	for _, entry := range entries {
		r, ok := parseDenyRule(entry)
		if !ok {
			return true // an entry that cannot be read denies everything, never nothing
		}
		if r.deniesAny(invs, 0) {
			return true
		}
	}
	return false
}

// deniesAny reports whether r denies any of the invocations. A deny list errs on the side of
// refusing: besides each invocation seen through the wrappers capgate knows, it reads every
// argument tail as a command, since a program it does not know may run its arguments
// (stdbuf, ionice, setsid, flock, chroot ...), and every argument with a blank in it as a
// shell string, since a program may hand it to a shell (su -c, flock -c, ssh, watch). So a
// "rm -rf" rule also refuses "echo rm -rf x": a false refusal, never a slip.
func (r denyRule) deniesAny(invs []invocation, depth int) bool {
	for _, inv := range invs {
		if r.matches(inv.argv, inv.argsOpen) {
			return true
		}
		for i := 1; i < len(inv.argv); i++ {
			w := inv.argv[i]
			if !strings.HasPrefix(w, "-") && r.matches(inv.argv[i:], inv.argsOpen) {
				return true
			}
			if depth >= MaxUnwrapDepth || !strings.ContainsAny(w, " \t\n") {
				continue
			}
			for _, s := range shellStringCandidates(w) {
				if r.deniesAny(nestedInvocations(s), depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// shellStringCandidates are the ways an argument word may carry a shell string: the word
// itself, and the value of an option with the string attached (-c'...', --command=...).
func shellStringCandidates(w string) []string {
	out := []string{w}
	switch {
	case strings.HasPrefix(w, "--"):
		if _, v, ok := strings.Cut(w, "="); ok {
			out = append(out, v)
		}
	case strings.HasPrefix(w, "-") && len(w) > 2:
		out = append(out, w[2:])
	}
	return out
}

// nestedInvocations reads s as a shell string. When it does not split as one capgate can
// check (operators, expansions), its words are taken apart at blanks and shell operators
// and read as one command, whose tails deniesAny then checks.
func nestedInvocations(s string) []invocation {
	if invs, err := expandShellString(s); err == nil {
		return invs
	}
	words := strings.FieldsFunc(s, func(c rune) bool {
		return unicode.IsSpace(c) || strings.ContainsRune(";&|<>()`$'\"\\{}", c)
	})
	if len(words) == 0 {
		return nil
	}
	return []invocation{{argv: words}}
}

// An allowed_commands entry is a program, optionally followed by the words every command of
// it must begin with ("git status" allows git status --short, not git push). A program
// written as a bare name allows only commands that name it bare, found on the terminal's
// PATH; a program written as an absolute path allows only that path (cleaned). So "ps" does
// not allow ./ps, which could be anything the agent wrote.
type allowRule struct {
	program string
	prefix  []string
}

func parseAllowRule(entry string) (allowRule, bool) {
	argv, err := SplitCommand(entry)
	if err != nil || len(entry) > MaxEntryBytes {
		return allowRule{}, false
	}
	p := argv[0]
	if strings.Contains(p, "/") {
		if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasSuffix(p, "/") {
			return allowRule{}, false
		}
	} else if p == "" {
		return allowRule{}, false
	}
	return allowRule{program: p, prefix: argv[1:]}, true
}

func (r allowRule) allows(argv []string) bool {
	prog := argv[0]
	if strings.Contains(prog, "/") {
		// Exactly the entry, which is a clean absolute path: never cleaned first, because
		// "/usr/bin/link/../ps" goes where the link goes, not where its clean form says.
		if prog != r.program {
			return false
		}
	} else if prog != r.program {
		return false
	}
	return len(argv)-1 >= len(r.prefix) && slices.Equal(argv[1:1+len(r.prefix)], r.prefix)
}

// within reports whether every command r allows, parent allows too.
func (r allowRule) within(parent allowRule) bool {
	return r.program == parent.program && len(r.prefix) >= len(parent.prefix) &&
		slices.Equal(r.prefix[:len(parent.prefix)], parent.prefix)
}

// allowed reports whether every invocation is allowed by an entry.
func allowed(entries []string, invs []invocation) bool {
	rules := make([]allowRule, 0, len(entries))
	for _, e := range entries {
		if r, ok := parseAllowRule(e); ok {
			rules = append(rules, r)
		}
	}
	for _, inv := range invs {
		if inv.assigns {
			return false
		}
		if !slices.ContainsFunc(rules, func(r allowRule) bool { return r.allows(inv.argv) }) {
			return false
		}
	}
	return true
}
