package token

import (
	"strings"
)

// What a command constraint cannot see, it refuses. A token with allowed_commands,
// denied_commands or denied_patterns (and, for the same reason, one with allowed_paths) reads
// the words of a command: the program and its arguments. It cannot read what a program
// does with them. So, whatever the lists say, a constrained token refuses:
//
//   - shells and interpreters: a program whose behaviour is code it reads from an argument
//     (sh -c, python -c, perl -e, awk '{...}'), a script file, its standard input (sh alone
//     reads commands from stdin, as bash -s does), or its own configuration in HOME or the
//     current folder (git's core.fsmonitor, aliases and hooks; make's Makefile; an
//     editor's ! commands; ~/.wgetrc). An allow-list that names one allows nothing by it.
//   - programs that run other programs capgate does not unwrap (stdbuf, setsid, flock,
//     watch, strace, ssh, socat ...): the program they run is somewhere capgate does not
//     read it. The wrappers capgate does unwrap (sudo, doas, env, nice, nohup, timeout,
//     time, xargs, exec, command, find -exec) are checked with what they run.
//   - environment assignments (env NAME=value, sudo NAME=value): LD_PRELOAD, PATH, PAGER,
//     BASH_ENV and their kind change what an allowed program runs.
//   - options by which a program runs a program or writes or deletes files of its own
//     accord: find -delete -fprint -fprint0 -fprintf -fls, tar --to-command -I
//     --use-compress-program --checkpoint-action --info-script -F --new-volume-script
//     --rsh-command --rmt-command and remote archives (host:file), rsync -e --rsh
//     --rsync-path and remote paths, sed scripts with w W r R e (or from a file), sort
//     --compress-program, split --filter, zip -T -TT --unzip-command, install
//     --strip-program, man -P --pager -H --html, sdiff and diff3 --diff-program, env -P,
//     openssl's engines and providers, pandoc filters, tcpdump -z, TeX's shell escape.
//
// With allowed_paths, also: a program that takes file names from its input or from a file
// (xargs, cpio, tar -T, any --files-from or --files0-from, zip -@), and find's -L, -H and
// -follow, which walk through links to wherever they lead.
//
// Programs are matched by base name in lower case, a version suffix dropped: /usr/bin/SH,
// ./sh, Python3.11, perl5.36 and gcc-12 are sh, python, perl and gcc. A renamed copy of an
// interpreter is not recognized: a deny-list cannot know what a program is. An allow-list
// can, which is why it is the strong form: it allows only programs found by the names it
// lists on the terminal's fixed PATH.

// The rules that name why a program was refused.
const (
	RuleInterpreter = "command: a shell or interpreter, whose code no constraint can read"
	RuleRunner      = "command: a program that runs other programs capgate does not unwrap"
	RuleEnvironment = "command: sets environment variables, which change what a program runs"
	RuleRunsByOpt   = "command: an option or script by which a program runs a program, or writes, reads or deletes files itself"
	RuleNamesInput  = "command: takes file names from its input or a file, or follows links, where allowed_paths cannot see them"
)

// interpreters are the shells and interpreters, by normalized name (programKey).
var interpreters = setOf(
	// shells
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "lksh", "pdksh", "oksh", "ash", "yash", "posh",
	"fish", "csh", "tcsh", "rc", "es", "xonsh", "elvish", "nu", "pwsh", "powershell", "rbash",
	// languages
	"python", "pythonw", "pypy", "perl", "ruby", "irb", "erb", "node", "nodejs", "deno", "bun",
	"php", "php-cgi", "lua", "luajit", "tclsh", "wish", "expect", "awk", "gawk", "mawk", "nawk",
	"r", "rscript", "julia", "guile", "racket", "sbcl", "clisp", "ecl", "ocaml", "ghc", "ghci",
	"runghc", "runhaskell", "erl", "escript", "elixir", "iex", "java", "jshell", "jrunscript",
	"groovy", "scala", "kotlin", "kotlinc", "swift", "dotnet", "mono", "csharp", "osascript",
	"dc", "m4", "gnuplot", "octave", "gs", "ghostscript",
	// programs that read commands from their input, files or configuration
	"ed", "red", "ex", "vi", "vim", "nvim", "view", "vimdiff", "gvim", "rvim", "emacs",
	"emacsclient", "nano", "pico", "sqlite3", "duckdb", "mysql", "mariadb", "psql", "gdb",
	"lldb", "git", "hg", "svn", "fossil", "bzr", "wget", "exiftool", "convert", "magick",
	"mogrify", "identify",
	// build tools, package managers and compilers: they run what a Makefile, a package or an
	// option names (gcc -wrapper, -fplugin; go -toolexec; tcc -run)
	"make", "gmake", "bmake", "pmake", "cmake", "ninja", "meson", "scons", "bazel", "gradle",
	"gradlew", "mvn", "ant", "sbt", "rake", "bundle", "gem", "pip", "pipx", "poetry", "uv",
	"npm", "npx", "yarn", "pnpm", "corepack", "cargo", "rustc", "go", "gcc", "g++", "cc", "c++",
	"clang", "clang++", "tcc", "javac",
)

// runners are programs that run another program, given in their arguments or a file, which
// capgate does not unwrap.
var runners = setOf(
	"stdbuf", "setsid", "ionice", "chrt", "taskset", "numactl", "prlimit", "flock", "chroot", "unshare",
	"nsenter", "runuser", "su", "sg", "newgrp", "pkexec", "setpriv", "capsh", "firejail",
	"bwrap", "systemd-run", "systemd-nspawn", "at", "batch", "crontab", "watch", "parallel",
	"sem", "strace", "ltrace", "valgrind", "perf", "proot", "fakeroot", "fakechroot",
	"catchsegv", "trickle", "torsocks", "proxychains", "proxychains4", "tsocks", "daemonize",
	"start-stop-daemon", "dbus-launch", "dbus-run-session", "xvfb-run", "xdg-open", "run-parts",
	"script", "tmux", "screen", "dtach", "abduco", "sshpass", "ssh-agent", "cpulimit", "entr",
	"ifne", "chronic", "pee", "vipe", "unbuffer", "socat", "ncat", "nc", "netcat", "setarch",
	"linux32", "linux64", "logsave", "chpst", "setuidgid", "softlimit", "envdir", "ld.so",
	"ssh", "scp", "sftp", "slogin", "rsh", "rlogin", "rcp", "sudoedit", "editor",
	"sensible-editor", "pager", "sensible-pager", "x-terminal-emulator", "open",
)

// programAliases are other names of programs the tables know: GNU's where another system's
// tools come first, and the BSD tar, whose dangerous options are GNU tar's.
var programAliases = map[string]string{
	"gsed": "sed", "gtar": "tar", "bsdtar": "tar", "gfind": "find", "gsort": "sort", "gsplit": "split",
	"ginstall": "install", "gstdbuf": "stdbuf", "gchroot": "chroot",
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// programKey is the name a program is known by in the tables: the base name of word, in
// lower case, without a trailing version (python3.11, perl5.36.0, gcc-12, lua5.4, php8.2) or
// an alternative's suffix (vim.tiny, busybox.static) when what is left is a name the tables
// know, with a GNU target prefix dropped (x86_64-linux-gnu-gcc-12 is gcc), and git for git's
// own git-* programs.
func programKey(word string) string {
	name := strings.ToLower(programName(word))
	name = strings.TrimSuffix(name, ".exe")
	if a, ok := programAliases[name]; ok {
		return a
	}
	if strings.HasPrefix(name, "ld-linux") || strings.HasPrefix(name, "ld-musl") {
		return "ld.so" // the dynamic loader runs any program it is given
	}
	if known(name) {
		return name
	}
	if base := stripVersion(name); base != name && known(base) {
		return base
	}
	// Debian's alternatives and static builds: vim.tiny, vim.basic, busybox.static,
	// sh.distrib.
	if head, _, ok := strings.Cut(name, "."); ok && head != "" {
		if known(head) {
			return head
		}
		if base := stripVersion(head); known(base) {
			return base
		}
	}
	// git's own programs (git-shell, git-upload-pack) read its configuration too.
	if strings.HasPrefix(name, "git-") {
		return "git"
	}
	// A cross compiler: the last words of a target triplet prefix.
	if parts := strings.Split(name, "-"); len(parts) >= 3 {
		for i := 1; i < len(parts); i++ {
			tail := strings.Join(parts[i:], "-")
			if known(tail) {
				return tail
			}
			if base := stripVersion(tail); known(base) {
				return base
			}
		}
	}
	return name
}

func known(name string) bool {
	return interpreters[name] || runners[name] || wrappers[name].opts != nil || wrappers[name].kind != wrapArgs || optionRules[name] != nil
}

// stripVersion drops a trailing version: digits and dots, after an optional "-" or "_",
// with an optional letter after them (python3m, python3.11d).
func stripVersion(name string) string {
	i := len(name)
	if i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z' && i > 1 && name[i-2] >= '0' && name[i-2] <= '9' {
		i--
	}
	j := i
	for j > 0 && (name[j-1] >= '0' && name[j-1] <= '9' || name[j-1] == '.') {
		j--
	}
	if j == i || j == 0 || name[j] == '.' {
		return name
	}
	if name[j-1] == '-' || name[j-1] == '_' {
		j--
	}
	if j == 0 {
		return name
	}
	return name[:j]
}

// tailPrograms are the shells, interpreters and runners a word past a command's program may
// not name under a token without an allow-list (tailRule): the ones whose names are not
// also common words ("at", "go", "watch", "script" are left out).
var tailPrograms = setOf(
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "lksh", "ash", "yash", "posh", "fish", "csh", "tcsh", "rbash",
	"busybox", "toybox", "python", "pythonw", "pypy", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
	"lua", "luajit", "tclsh", "wish", "expect", "awk", "gawk", "mawk", "nawk", "pwsh", "powershell", "osascript",
	"rscript", "stdbuf", "setsid", "ionice", "chrt", "taskset", "numactl", "prlimit", "flock", "chroot", "unshare",
	"nsenter", "runuser", "pkexec", "setpriv", "capsh", "firejail", "bwrap", "systemd-run", "systemd-nspawn",
	"strace", "ltrace", "valgrind", "socat", "ncat", "netcat", "sshpass", "ssh", "proot", "fakeroot", "fakechroot",
	"unbuffer", "xvfb-run", "dbus-launch", "run-parts", "ld.so",
)

// tailRule is what a token without an allow-list also refuses: a command with a word, past
// its program, that names a shell, an interpreter or a runner of tailPrograms. A program
// capgate does not know may run its arguments (gxargs sh, or any of the many programs that
// run a command they are given), and without an allow-list nothing else would stop the shell
// it runs; so a deny-list refuses "echo bash" too, a false refusal, never a slip. An
// allow-list needs no such reading: a program it does not list does not run. The words of
// wrappers capgate unwraps are read here too, where a misread option would hide a shell.
func tailRule(inv invocation) string {
	for _, w := range inv.argv[1:] {
		if strings.HasPrefix(w, "-") || w == "" {
			continue
		}
		k := programKey(w)
		switch {
		case !tailPrograms[k]:
		case interpreters[k]:
			return RuleInterpreter
		case runners[k]:
			return RuleRunner
		}
	}
	return ""
}

// programRule returns the rule that refuses the invocation under a command or path
// constraint, or "" when none does. paths is set when the token has allowed_paths.
func programRule(inv invocation, paths bool) string {
	key := programKey(inv.argv[0])
	switch {
	case inv.shell || interpreters[key]:
		return RuleInterpreter
	case runners[key]:
		return RuleRunner
	case inv.setsEnv:
		return RuleEnvironment
	case inv.runsByOption:
		return RuleRunsByOpt
	case paths && (inv.namesFromInput || filesFrom(inv.argv[1:])):
		return RuleNamesInput
	}
	if r := optionRules[key]; r != nil {
		return r(inv.argv[1:], paths)
	}
	// A wrapper's own words, before the command it runs, are read as option values; in case
	// one was misread (sudo -h alone is --help, not a host), none may name a shell or a
	// runner either.
	if _, ok := wrappers[key]; ok {
		end := len(inv.argv)
		if len(inv.programs) > 1 {
			end = inv.programs[1]
		}
		for _, w := range inv.argv[1:end] {
			if strings.HasPrefix(w, "-") {
				continue
			}
			switch k := programKey(w); {
			case interpreters[k]:
				return RuleInterpreter
			case runners[k]:
				return RuleRunner
			}
		}
	}
	return ""
}

// optionRules check the arguments of programs that are allowed but for some of their
// options. Each returns a rule or "".
var optionRules = map[string]func(args []string, paths bool) string{
	"tar":     tarRule,
	"sed":     sedRule,
	"rsync":   rsyncRule,
	"sort":    longOptRule("compress-program"),
	"split":   longOptRule("filter"),
	"install": longOptRule("strip-program"),
	"sdiff":   longOptRule("diff-program"),
	"diff3":   longOptRule("diff-program"),
	"zip":     zipRule,
	"man":     manRule,
	"openssl": opensslRule,
	"pandoc":  pandocRule,
	"tcpdump": tcpdumpRule,
	"cpio":    cpioRule,
	"tex":     texRule, "latex": texRule, "pdflatex": texRule, "xelatex": texRule,
	"lualatex": texRule, "luatex": texRule, "pdftex": texRule, "xetex": texRule,
}

// filesFrom is the rule for every program under allowed_paths: an option that reads file
// names from a file or the input.
func filesFrom(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			if strings.Contains(name, "files-from") || strings.Contains(name, "files0-from") {
				return true
			}
		}
	}
	return false
}

// longOptRule refuses a long option, or any abbreviation of it GNU getopt_long would take.
func longOptRule(names ...string) func(args []string, paths bool) string {
	return func(args []string, paths bool) string {
		for _, a := range args {
			if a == "--" {
				break
			}
			if !strings.HasPrefix(a, "--") || len(a) < 3 {
				continue
			}
			name, _, _ := strings.Cut(a[2:], "=")
			for _, n := range names {
				if strings.HasPrefix(n, name) {
					return RuleRunsByOpt
				}
			}
		}
		return ""
	}
}

// tarRule: GNU tar's options that run programs, and archives on another host (host:file,
// which tar reaches by running rsh or ssh) unless --force-local says otherwise. The first
// word may be old-style letters without a dash (tar cfI a.tar prog). Under allowed_paths,
// -T and --files-from read the names of the files from a file.
func tarRule(args []string, paths bool) string {
	// Long options that run a program or read names from a file; any abbreviation counts.
	danger := []string{"to-command", "use-compress-program", "checkpoint-action", "info-script",
		"new-volume-script", "rsh-command", "rmt-command"}
	safeExact := setOf("checkpoint", "to-stdout")
	shortArg := "bCfFgHIKLNTVX"
	var archives []string
	forceLocal := false
	letters := func(w string, rest []string, old bool) (consumed int, rule string) {
		for i := 0; i < len(w); i++ {
			c := w[i]
			switch {
			case c == 'I' || c == 'F':
				return 0, RuleRunsByOpt
			case c == 'T' && paths:
				return 0, RuleNamesInput
			case strings.IndexByte(shortArg, c) >= 0:
				var val string
				if !old && i+1 < len(w) {
					val = w[i+1:]
					i = len(w)
				} else {
					if consumed >= len(rest) {
						return consumed, ""
					}
					val = rest[consumed]
					consumed++
				}
				if c == 'f' {
					archives = append(archives, val)
				}
				if !old {
					return consumed, ""
				}
			}
		}
		return consumed, ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			if name == "force-local" {
				forceLocal = true
			}
			if !safeExact[name] {
				for _, d := range danger {
					if name != "" && strings.HasPrefix(d, name) {
						return RuleRunsByOpt
					}
				}
			}
			if paths && name != "" && strings.HasPrefix("files-from", name) && len(name) >= 3 {
				return RuleNamesInput
			}
			if name != "" && strings.HasPrefix("file", name) && len(name) >= 3 {
				if !hasVal && i+1 < len(args) {
					val = args[i+1]
					i++
				}
				archives = append(archives, val)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			n, rule := letters(a[1:], args[i+1:], false)
			if rule != "" {
				return rule
			}
			i += n
		case i == 0:
			// Old-style letters, each taking its argument from the words that follow.
			n, rule := letters(a, args[1:], true)
			if rule != "" {
				return rule
			}
			i += n
		}
	}
	if !forceLocal {
		for _, f := range archives {
			if strings.Contains(f, ":") {
				return RuleRunsByOpt
			}
		}
	}
	return ""
}

// rsyncRule: rsync runs a remote shell (-e, --rsh, and for every host:path or rsync://
// argument), and --rsync-path names the program on the other side.
func rsyncRule(args []string, _ bool) string {
	for _, a := range args {
		if a == "--" {
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			for _, d := range []string{"rsh", "rsync-path", "daemon", "config"} {
				if name != "" && strings.HasPrefix(d, name) {
					return RuleRunsByOpt
				}
			}
			continue
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if strings.IndexByte(a[1:], 'e') >= 0 {
				return RuleRunsByOpt
			}
			continue
		}
		if strings.Contains(a, ":") {
			return RuleRunsByOpt
		}
	}
	return ""
}

// zipRule: zip -T runs unzip (or the program -TT names), and -@ reads names from the input.
func zipRule(args []string, paths bool) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			if name != "" && (strings.HasPrefix("unzip-command", name) || strings.HasPrefix("test", name)) {
				return RuleRunsByOpt
			}
			if paths && name == "names-stdin" {
				return RuleNamesInput
			}
			continue
		}
		if strings.HasPrefix(a, "-") {
			if strings.IndexByte(a, 'T') >= 0 {
				return RuleRunsByOpt
			}
			if paths && strings.IndexByte(a, '@') >= 0 {
				return RuleNamesInput
			}
		}
	}
	return ""
}

// manRule: man runs the pager -P names, a browser for -H, and the viewer of -X.
func manRule(args []string, _ bool) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			for _, d := range []string{"pager", "html", "gxditview", "preprocessor"} {
				if name != "" && strings.HasPrefix(d, name) {
					return RuleRunsByOpt
				}
			}
			continue
		}
		if strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], "PHXp") {
			return RuleRunsByOpt
		}
	}
	return ""
}

// opensslRule: openssl loads engines and providers, shared objects of any code.
func opensslRule(args []string, _ bool) string {
	for _, a := range args {
		w := strings.TrimLeft(a, "-")
		if strings.HasPrefix(w, "engine") || strings.HasPrefix(w, "provider") || strings.Contains(w, "_engine") {
			return RuleRunsByOpt
		}
	}
	return ""
}

// pandocRule: pandoc runs filters (--filter, -F) and Lua filters (--lua-filter, -L).
func pandocRule(args []string, _ bool) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			for _, d := range []string{"filter", "lua-filter"} {
				if name != "" && strings.HasPrefix(d, name) {
					return RuleRunsByOpt
				}
			}
			continue
		}
		if strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], "FL") {
			return RuleRunsByOpt
		}
	}
	return ""
}

// tcpdumpRule: tcpdump -z runs a command on each saved file.
func tcpdumpRule(args []string, _ bool) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.IndexByte(a, 'z') >= 0 {
			return RuleRunsByOpt
		}
	}
	return ""
}

// cpioRule: cpio reads names from its input and reaches other hosts with rsh.
func cpioRule(args []string, paths bool) string {
	if paths {
		return RuleNamesInput
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--rsh") || strings.Contains(a, ":") {
			return RuleRunsByOpt
		}
	}
	return ""
}

// texRule: TeX runs shell commands (\write18) when asked to.
func texRule(args []string, _ bool) string {
	for _, a := range args {
		w := strings.TrimLeft(a, "-")
		if strings.HasPrefix(w, "shell-escape") || strings.HasPrefix(w, "enable-write18") || strings.HasPrefix(w, "shell-restricted") {
			return RuleRunsByOpt
		}
	}
	return ""
}
