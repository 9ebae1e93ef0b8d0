package token

import (
	"slices"
	"strings"
)

// A wrapper is a program that runs another program given in its arguments: sudo rm -rf /
// runs rm. A constrained token checks the wrapper and every program it reaches, to any depth
// up to MaxUnwrapDepth, so that neither a denied command nor a program outside
// allowed_commands hides behind one. The wrappers known, with their options:
//
//	sudo doas env nice nohup timeout time xargs exec command builtin busybox eval coproc
//	noglob nocorrect ! -      and the shells sh bash dash zsh ksh mksh ash with -c
//
// A wrapper given an option that is not in its table, or none of the command it should run,
// is refused: guessing whether an unknown option takes an argument is how the command it
// wraps would be misread. Program names are compared in lower case for wrappers and denied
// commands, because on a case-insensitive filesystem SUDO runs sudo.

// invocation is one program a command runs, with its arguments.
type invocation struct {
	argv []string
	// argsOpen: more arguments are added when it runs (xargs), so only the program and the
	// arguments before them are known.
	argsOpen bool
	// assigns: a shell string set variables before it (X=1 cmd), which can change what runs
	// (PATH, LD_PRELOAD).
	assigns bool
	// wrapper: the program is a wrapper whose command is another invocation.
	wrapper bool
	// shell: an option of the wrapper makes it run a shell or an editor of its own (sudo -s,
	// sudo -i, sudo -e, doas -s).
	shell bool
	// setsEnv: the wrapper sets environment variables for what it runs (env X=1, sudo X=1).
	setsEnv bool
	// runsByOption: an option makes it run a program found elsewhere, or write or delete
	// files itself (env -P, find -delete, find -fprint).
	runsByOption bool
	// namesFromInput: it takes names from its input or a file, or follows links while it
	// walks (xargs, find -files0-from, find -L).
	namesFromInput bool
	// programs are the positions in argv of the programs it and what it wraps run: 0, and
	// the first word of each wrapped command that is a tail of argv.
	programs []int
}

// optTable is the options of a wrapper: short ones that take an argument (attached or next),
// short ones that take none, short ones whose argument can only be attached, and long ones
// (without the leading "--") with and without an argument. A long option without an
// argument may still carry "=value" (optional arguments).
type optTable struct {
	shortArg, shortBool, shortOptional string
	longArg, longBool                  []string
	assignments                        bool // NAME=value words may follow the options (sudo, env)
	// shellShort and shellLong are the options that make the wrapper run a shell (or an
	// editor) of its own, with or without a command (sudo -s, -i, -e).
	shellShort string
	shellLong  []string
	// pathShort and pathLong are the options that make it look for the program it runs
	// somewhere else than the PATH (env -P).
	pathShort string
	pathLong  []string
}

var (
	sudoOpts = optTable{
		shortArg:    "CDghpRrTtUu",
		shortBool:   "AbBEeHiKklnPSsVv",
		longArg:     []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"},
		longBool:    []string{"askpass", "background", "bell", "preserve-env", "edit", "help", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate", "version"},
		assignments: true,
		shellShort:  "sie",
		shellLong:   []string{"shell", "login", "edit"},
	}
	doasOpts = optTable{shortArg: "Cu", shortBool: "Lns", shellShort: "s"}
	envOpts  = optTable{
		shortArg:    "uCSP",
		shortBool:   "i0v",
		longArg:     []string{"unset", "chdir", "split-string"},
		longBool:    []string{"ignore-environment", "null", "debug", "help", "version", "block-signal", "default-signal", "ignore-signal", "list-signal-handling"},
		assignments: true,
		pathShort:   "P",
	}
	niceOpts    = optTable{shortArg: "n", longArg: []string{"adjustment"}, longBool: []string{"help", "version"}}
	nohupOpts   = optTable{longBool: []string{"help", "version"}}
	timeoutOpts = optTable{shortArg: "sk", shortBool: "fpv", longArg: []string{"signal", "kill-after"}, longBool: []string{"foreground", "preserve-status", "verbose", "help", "version"}}
	timeOpts    = optTable{shortArg: "fo", shortBool: "apqvV", longArg: []string{"format", "output"}, longBool: []string{"append", "portability", "quiet", "verbose", "help", "version"}}
	xargsOpts   = optTable{
		shortArg:      "adEILnPs",
		shortBool:     "0oprtx",
		shortOptional: "eil",
		longArg:       []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longBool:      []string{"null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits", "help", "version", "eof", "replace", "max-lines"},
	}
	execOpts    = optTable{shortArg: "a", shortBool: "cl"}
	commandOpts = optTable{shortBool: "pvV"}
	noOpts      = optTable{}
)

type wrapperKind uint8

const (
	wrapArgs  wrapperKind = iota // the command follows the options
	wrapShell                    // a shell: the command is the string after -c
	wrapEval                     // eval: the arguments joined are a shell string
)

type wrapper struct {
	kind     wrapperKind
	opts     *optTable
	duration bool // timeout: a duration precedes the command
	argsOpen bool // xargs: the command gets more arguments when it runs
	legacyN  bool // nice: -N is an adjustment
	noDashes bool // busybox, builtin, !: no options; a first word with "-" runs nothing
}

var wrappers = map[string]wrapper{
	"sudo":      {opts: &sudoOpts},
	"doas":      {opts: &doasOpts},
	"env":       {opts: &envOpts},
	"nice":      {opts: &niceOpts, legacyN: true},
	"nohup":     {opts: &nohupOpts},
	"timeout":   {opts: &timeoutOpts, duration: true},
	"time":      {opts: &timeOpts},
	"xargs":     {opts: &xargsOpts, argsOpen: true},
	"exec":      {opts: &execOpts},
	"command":   {opts: &commandOpts},
	"builtin":   {opts: &noOpts, noDashes: true},
	"busybox":   {opts: &noOpts, noDashes: true},
	"coproc":    {opts: &noOpts, noDashes: true},
	"noglob":    {opts: &noOpts, noDashes: true},
	"nocorrect": {opts: &noOpts, noDashes: true},
	"!":         {opts: &noOpts, noDashes: true},
	"-":         {opts: &noOpts, noDashes: true},
	"eval":      {kind: wrapEval},
	"sh":        {kind: wrapShell},
	"bash":      {kind: wrapShell},
	"dash":      {kind: wrapShell},
	"zsh":       {kind: wrapShell},
	"ksh":       {kind: wrapShell},
	"mksh":      {kind: wrapShell},
	"ash":       {kind: wrapShell},
	// GNU's names where another system's tools come first.
	"genv":     {opts: &envOpts},
	"gnice":    {opts: &niceOpts, legacyN: true},
	"gnohup":   {opts: &nohupOpts},
	"gtimeout": {opts: &timeoutOpts, duration: true},
	"gxargs":   {opts: &xargsOpts, argsOpen: true},
	"toybox":   {opts: &noOpts, noDashes: true},
}

// expandCommand splits a command and returns every program it runs, the outermost first.
func expandCommand(cmd string) ([]invocation, error) {
	argv, err := split(cmd, false)
	if err != nil {
		return nil, err
	}
	e := expander{}
	if _, err := e.add(argv, 0, false, false); err != nil {
		return nil, err
	}
	return e.out, nil
}

// expandShellString reads s as a string a shell runs (sh -c s) and returns every program it
// runs, the outermost first.
func expandShellString(s string) ([]invocation, error) {
	argv, err := split(s, true)
	if err != nil {
		return nil, err
	}
	e := expander{}
	if _, err := e.add(argv, 0, true, false); err != nil {
		return nil, err
	}
	return e.out, nil
}

type expander struct {
	out     []invocation
	unwraps int
}

// add records argv and whatever it wraps, and returns the positions in argv of the programs
// it runs (see invocation.programs). shell is set when argv came from a shell string, where
// leading NAME=value words are assignments, not the program.
func (e *expander) add(argv []string, depth int, shell, argsOpen bool) ([]int, error) {
	if depth > MaxUnwrapDepth {
		return nil, ErrCommandTooNested
	}
	inv := invocation{argsOpen: argsOpen}
	if shell {
		for len(argv) > 0 && isAssignment(argv[0]) {
			argv = argv[1:]
			inv.assigns = true
		}
		if len(argv) == 0 {
			// Only assignments: the shell runs nothing. Recorded so that
			// allowed_commands refuses it.
			e.out = append(e.out, invocation{argv: []string{""}, assigns: true, programs: []int{0}})
			return nil, nil
		}
	}
	inv.argv = argv
	inv.programs = []int{0}
	// Wrappers are known by their programKey, so that busybox.static and bash5.2 are
	// unwrapped as busybox and bash are.
	name := programKey(argv[0])
	if name == "find" {
		return e.addFind(inv, depth)
	}
	w, ok := wrappers[name]
	inv.wrapper = ok
	at := len(e.out)
	e.out = append(e.out, inv)
	if !ok {
		return inv.programs, nil
	}
	e.unwraps++
	if e.unwraps > MaxUnwraps {
		return nil, ErrCommandTooNested
	}
	args := argv[1:]
	switch w.kind {
	case wrapEval:
		if len(args) == 0 {
			return inv.programs, nil
		}
		inner, err := split(strings.Join(args, " "), true)
		if err != nil {
			return nil, err
		}
		_, err = e.add(inner, depth+1, true, false)
		return inv.programs, err
	case wrapShell:
		s, ok, err := shellCommand(args)
		if err != nil || !ok {
			return inv.programs, err // a script or stdin: nothing more can be seen
		}
		inner, err := split(s, true)
		if err != nil {
			return nil, err
		}
		_, err = e.add(inner, depth+1, true, false)
		return inv.programs, err
	}
	rest, fl, err := w.skipOptions(args)
	if err != nil {
		return nil, err
	}
	e.out[at].shell = fl.shell
	e.out[at].setsEnv = fl.assigns
	e.out[at].runsByOption = fl.altPath
	e.out[at].namesFromInput = w.argsOpen
	if len(rest) == 0 {
		return inv.programs, nil // runs nothing (xargs then runs echo)
	}
	inner, err := e.add(rest, depth+1, false, argsOpen || w.argsOpen)
	if err != nil {
		return nil, err
	}
	if !fl.split {
		// The wrapped command is a tail of argv: its programs are programs here too.
		off := len(argv) - len(rest)
		for _, p := range inner {
			e.out[at].programs = append(e.out[at].programs, off+p)
		}
	}
	return e.out[at].programs, nil
}

// addFind records a find command and each command its -exec, -execdir, -ok and -okdir
// run (with {} for the names it finds, so their arguments are open), and marks the actions
// that write or delete files (-delete, -fprint, -fprint0, -fprintf, -fls), the reading of
// starting points from a file (-files0-from) and the following of links (-L, -H, -follow).
// Every word that is one of these counts, even where find would read it as the argument of
// another test (-name -delete): a false refusal, never a slip.
func (e *expander) addFind(inv invocation, depth int) ([]int, error) {
	at := len(e.out)
	e.out = append(e.out, inv)
	argv := inv.argv
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; a {
		case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
			e.out[at].runsByOption = true
		case "-files0-from", "-L", "-H", "-follow":
			e.out[at].namesFromInput = true
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(argv) && argv[end] != ";" && (argv[end] != "+" || argv[end-1] != "{}") {
				end++
			}
			if end >= len(argv) || end == i+1 || strings.HasPrefix(argv[i+1], "-") {
				return nil, ErrCommandWrapper
			}
			e.unwraps++
			if e.unwraps > MaxUnwraps {
				return nil, ErrCommandTooNested
			}
			inner, err := e.add(argv[i+1:end], depth+1, false, true)
			if err != nil {
				return nil, err
			}
			for _, p := range inner {
				e.out[at].programs = append(e.out[at].programs, i+1+p)
			}
			i = end
		}
	}
	e.out[at].wrapper = len(e.out) > at+1
	return e.out[at].programs, nil
}

// isAssignment reports whether a word of a shell string is NAME=value.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// optFlags are what a wrapper's options say about what it runs.
type optFlags struct {
	shell   bool // it runs a shell or editor of its own (sudo -s)
	assigns bool // NAME=value words set its command's environment
	altPath bool // it looks for the program elsewhere than the PATH (env -P)
	split   bool // the command came from a string split into words (env -S), not a tail
}

// skipOptions returns the wrapped command: the arguments after the wrapper's options (and
// after its assignments and duration, where it has them).
func (w wrapper) skipOptions(args []string) ([]string, optFlags, error) {
	var fl optFlags
	t := w.opts
	if w.noDashes {
		if len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
			return nil, fl, nil // busybox --list and the like run nothing
		}
		return args, fl, nil
	}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if w.legacyN && isNiceAdjustment(a) {
			args = args[1:]
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, _, hasValue := strings.Cut(a[2:], "=")
			full, takesArg, ok := t.long(name)
			if !ok {
				return nil, fl, ErrCommandWrapper
			}
			fl.shell = fl.shell || slices.Contains(t.shellLong, full)
			fl.altPath = fl.altPath || slices.Contains(t.pathLong, full)
			args = args[1:]
			if takesArg && !hasValue {
				if len(args) == 0 {
					return nil, fl, ErrCommandWrapper
				}
				if full == "split-string" {
					return w.splitString(args[0], args[1:], fl)
				}
				args = args[1:]
			} else if full == "split-string" {
				_, v, _ := strings.Cut(a, "=")
				return w.splitString(v, args, fl)
			}
			continue
		}
		args = args[1:]
		for j := 1; j < len(a); j++ {
			c := a[j]
			fl.shell = fl.shell || strings.IndexByte(t.shellShort, c) >= 0
			fl.altPath = fl.altPath || strings.IndexByte(t.pathShort, c) >= 0
			switch {
			case strings.IndexByte(t.shortBool, c) >= 0:
				continue
			case strings.IndexByte(t.shortOptional, c) >= 0:
				j = len(a) // the rest of the word is its argument
			case strings.IndexByte(t.shortArg, c) >= 0:
				val := a[j+1:]
				if val == "" {
					if len(args) == 0 {
						return nil, fl, ErrCommandWrapper
					}
					val, args = args[0], args[1:]
				}
				if w.opts == &envOpts && c == 'S' {
					return w.splitString(val, args, fl)
				}
				j = len(a)
			default:
				return nil, fl, ErrCommandWrapper
			}
		}
	}
	if t.assignments {
		for len(args) > 0 && isAssignment(args[0]) {
			args = args[1:]
			fl.assigns = true
		}
	}
	if w.duration {
		if len(args) == 0 {
			return nil, fl, ErrCommandWrapper
		}
		args = args[1:]
	}
	return args, fl, nil
}

// splitString handles env -S: the string is split into words that come before the rest.
func (w wrapper) splitString(s string, rest []string, fl optFlags) ([]string, optFlags, error) {
	words, err := split(s, false)
	if err != nil {
		if err == ErrCommandEmpty {
			words = nil
		} else {
			return nil, fl, err
		}
	}
	if len(words)+len(rest) > MaxArgs {
		return nil, fl, ErrCommandTooMany
	}
	out, more, err := w.skipOptions(append(words, rest...))
	more.shell = more.shell || fl.shell
	more.assigns = more.assigns || fl.assigns
	more.altPath = more.altPath || fl.altPath
	more.split = true
	return out, more, err
}

// long resolves a long option name, which may be abbreviated to any unambiguous prefix as
// GNU getopt_long allows.
func (t *optTable) long(name string) (full string, takesArg, ok bool) {
	found := 0
	for _, l := range t.longArg {
		if l == name {
			return l, true, true
		}
		if name != "" && strings.HasPrefix(l, name) {
			full, takesArg = l, true
			found++
		}
	}
	for _, l := range t.longBool {
		if l == name {
			return l, false, true
		}
		if name != "" && strings.HasPrefix(l, name) {
			full, takesArg = l, false
			found++
		}
	}
	return full, takesArg, found == 1
}

func isNiceAdjustment(a string) bool {
	s := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	s = strings.TrimLeft(s, "+-")
	if s == "" || len(s) > 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shellCommand finds the string a shell runs with -c: the shell's options are read up to the
// first word that is not one, which is the command string when -c was among them. ok is
// false when the shell runs a script or reads its commands from stdin.
func shellCommand(args []string) (cmd string, ok bool, err error) {
	cflag := false
	for len(args) > 0 {
		a := args[0]
		if a == "--" || a == "-" {
			args = args[1:]
			break
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		args = args[1:]
		if strings.HasPrefix(a, "--") {
			if a == "--rcfile" || a == "--init-file" {
				if len(args) == 0 {
					return "", false, ErrCommandWrapper
				}
				args = args[1:]
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				cflag = true
			case 'o', 'O':
				if len(args) == 0 {
					return "", false, ErrCommandWrapper
				}
				args = args[1:]
			}
		}
	}
	if !cflag {
		return "", false, nil
	}
	if len(args) == 0 {
		return "", false, ErrCommandWrapper
	}
	return args[0], true, nil
}
