package token

import (
	"strings"
)

// Under allowed_paths a command's words are paths too: a program may open any of them. Every
// word of every program a command runs (through the wrappers it is unwrapped from), but the
// words that name the programs themselves, is resolved against the command's cwd (see
// ResolvePath) and must match a pattern, and so are the parts of a word that may name a path
// on their own:
//
//   - a word that is not an option: the word (cat ../secret, cp x /etc/y, ln -s /etc l), and
//     what follows each = and : in it (dd of=/etc/x, file:///etc/passwd, host:/etc);
//   - a long option with a value (--output=/etc/x): the value, read as above;
//   - a short option word (-f/etc/x, -C.., -xzC/etc): every tail after its first letter,
//     since its value may be attached to any letter.
//
// So the patterns must cover the cwd's tree for commands to run at all ("/srv/ws/**"): a
// word that names no file (echo hello, -n 5) resolves to a path in the cwd that does not
// exist, and is allowed exactly when the cwd's tree is. What a program reads from its input,
// its configuration or a file of names, and where a program that walks a tree goes through
// the links it finds there (grep -R, cp -rL), words do not show: programs.go refuses the ones
// it knows (xargs, tar -T, find -L), and the sandbox, not the words, bounds the rest.

// commandPaths reports whether every word of invs that can name a path resolves, against
// cwd, to a path one of pats matches, examining at most budget path segments on disk.
func commandPaths(pats []pattern, invs []invocation, cwd string, budget int) bool {
	ok := func(cand string) bool {
		abs, err := resolvePath(cand, cwd, &budget)
		if err != nil {
			return false
		}
		for _, p := range pats {
			if p.match(abs) {
				return true
			}
		}
		return false
	}
	for _, inv := range invs {
		prog := make(map[int]bool, len(inv.programs))
		for _, i := range inv.programs {
			prog[i] = true
		}
		options := true
		for i, w := range inv.argv {
			if prog[i] {
				continue
			}
			if options && w == "--" {
				options = false
				continue
			}
			for _, cand := range pathCandidates(w, options) {
				if !ok(cand) {
					return false
				}
			}
		}
	}
	return true
}

// pathCandidates returns the parts of the word w that may name a path; options is false
// after "--", where no word is an option.
func pathCandidates(w string, options bool) []string {
	switch {
	case !options || !strings.HasPrefix(w, "-") || w == "-":
		return plainCandidates(w)
	case strings.HasPrefix(w, "--"):
		if _, v, ok := strings.Cut(w, "="); ok {
			return plainCandidates(v)
		}
		return nil
	}
	out := make([]string, 0, len(w)-2)
	for i := 2; i < len(w); i++ {
		out = append(out, w[i:])
	}
	return out
}

// plainCandidates are a word that is not an option and what follows each = and : in it.
func plainCandidates(w string) []string {
	out := []string{w}
	for i := 0; i < len(w); i++ {
		if (w[i] == '=' || w[i] == ':') && i+1 < len(w) {
			out = append(out, w[i+1:])
		}
	}
	return out
}
