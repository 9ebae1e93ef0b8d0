package token_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/capgate/capgate/internal/token"
)

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"ps", []string{"ps"}},
		{"  ps   aux\t", []string{"ps", "aux"}},
		{`"rm" -rf /`, []string{"rm", "-rf", "/"}},
		{`r\m -rf /`, []string{"rm", "-rf", "/"}},
		{`'r''m' -rf`, []string{"rm", "-rf"}},
		{`echo 'a b' "c d" e\ f`, []string{"echo", "a b", "c d", "e f"}},
		{`echo '' ""`, []string{"echo", "", ""}},
		{`echo "a\"b\\c\d"`, []string{"echo", `a"b\c\d`}},
		{`echo "\$HOME" '$HOME' \$HOME`, []string{"echo", "$HOME", "$HOME", "$HOME"}},
		{`echo 'it'\''s'`, []string{"echo", "it's"}},
		{"echo 'a;b|c&d'", []string{"echo", "a;b|c&d"}},
		{`echo "a;b" \; \|`, []string{"echo", "a;b", ";", "|"}},
		{"echo 'line\nnext'", []string{"echo", "line\nnext"}},
		{`ls *.go ~ {a,b}`, []string{"ls", "*.go", "~", "{a,b}"}},
		{`echo héllo`, []string{"echo", "héllo"}},
	}
	for _, c := range cases {
		got, err := token.SplitCommand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	bad := map[string]error{
		"":                   token.ErrCommandEmpty,
		"   ":                token.ErrCommandEmpty,
		"ls; rm -rf /":       token.ErrCommandOperator,
		"ls | sh":            token.ErrCommandOperator,
		"ls && rm":           token.ErrCommandOperator,
		"ls & rm":            token.ErrCommandOperator,
		"cat < /etc/shadow":  token.ErrCommandOperator,
		"echo > f":           token.ErrCommandOperator,
		"echo $(rm -rf /)":   token.ErrCommandOperator,
		"echo `rm -rf /`":    token.ErrCommandOperator,
		"echo $HOME":         token.ErrCommandOperator,
		"(rm -rf /)":         token.ErrCommandOperator,
		"ls\nrm -rf /":       token.ErrCommandOperator,
		"ls\rrm":             token.ErrCommandOperator,
		"ls \\\nrm":          token.ErrCommandOperator,
		`echo "$(rm -rf /)"`: token.ErrCommandExpansion,
		"echo \"`id`\"":      token.ErrCommandExpansion,
		`echo "unterminated`: token.ErrCommandQuote,
		`echo 'unterminated`: token.ErrCommandQuote,
		`echo trailing\`:     token.ErrCommandQuote,
		"echo a\x00b":        token.ErrCommandText,
		"echo \xff":          token.ErrCommandText,
	}
	for in, want := range bad {
		if _, err := token.SplitCommand(in); !errors.Is(err, want) {
			t.Errorf("SplitCommand(%q) = %v, want %v", in, err, want)
		}
	}
}

func TestQuoteCommand(t *testing.T) {
	for _, argv := range [][]string{
		{"rm", "-rf", "/"},
		{"echo", "", "a b", "it's", `"`, `\`, "$HOME", "`x`", "a\nb", "*", "~", "#", "=x", ";"},
	} {
		got, err := token.SplitCommand(token.QuoteCommand(argv))
		if err != nil || !slices.Equal(got, argv) {
			t.Errorf("round trip of %q: %q, %v", argv, got, err)
		}
	}
}

// commandInput is the Input of a call carrying one command, as the terminal's
// execute_command does.
func commandInput(cmd string) token.Input {
	return token.Input{
		Permission: "app.terminal.execute",
		Params:     map[string]any{"command": cmd},
		Commands:   []token.Command{{Value: token.Value{Pointer: "/command", Text: cmd}}},
		Dir:        "/srv/ws",
	}
}

func checkCommand(c token.Constraints, cmd string) (bool, string) {
	v := c.Check(commandInput(cmd))
	return v.OK, v.Rule
}

func TestDeniedCommands(t *testing.T) {
	c := token.Constraints{DeniedCommands: []string{"rm -rf", "shutdown"}, DeniedPatterns: []string{"sudo", "git push --force"}}
	deniedByCommands := []string{
		"rm -rf /",
		"rm -fr /",
		"rm -r -f /",
		"rm -f -r /",
		"rm -Rf /",
		"rm -R -f /",
		"rm -rfv /",
		"rm -v -r -i -f /",
		"rm --recursive --force /",
		"rm --recursive -f /",
		"rm --rec --fo /",
		"rm / -rf",
		"rm -r / -f",
		"/bin/rm -rf /",
		"./rm -rf /",
		"/usr/bin/../bin/rm -rf /",
		"RM -rf /", // a case-insensitive filesystem runs rm
		`"rm" -rf /`,
		`'rm' '-rf' /`,
		`r\m -rf /`,
		`r"m" -r"f" /`,
		"env X=1 rm -rf /",
		"env -i X=1 Y=2 rm -rf /",
		"env -u HOME rm -rf /",
		"env --unset=HOME -- rm -rf /",
		"env -S 'rm -rf /'",
		"env -S 'X=1 rm' -rf /",
		"bash -c 'rm -rf /'",
		"sh -c \"rm -rf /\"",
		"bash -xec 'rm -rf /'",
		"bash -o pipefail -c 'rm -rf /'",
		"bash --norc -c 'rm -rf /'",
		"dash -c 'X=1 rm -rf /'",
		"zsh -c 'exec rm -rf /'",
		"zsh -c '! rm -rf /'",
		"bash -c 'eval rm -rf /'",
		"bash -c \"bash -c 'rm -rf /'\"",
		"nice rm -rf /",
		"nice -n 19 rm -rf /",
		"nice -10 rm -rf /",
		"nohup rm -rf /",
		"timeout 5 rm -rf /",
		"timeout -s KILL 5s rm -rf /",
		"timeout --signal=KILL 5s rm -rf /",
		"time rm -rf /",
		"time -p rm -rf /",
		"xargs rm -rf",
		"xargs -0 -n 1 rm -rf",
		"xargs rm",
		"xargs -a list rm",
		"exec rm -rf /",
		"exec -a foo rm -rf /",
		"command rm -rf /",
		"builtin rm -rf /",
		"busybox rm -rf /",
		"busybox sh -c 'rm -rf /'",
		"eval rm -rf /",
		"eval 'rm -rf /'",
		"doas rm -rf /",
		"doas -u root rm -rf /",
		"nice nohup timeout 1 env X=1 time rm -rf /",
		"shutdown -h now",
		"/sbin/shutdown",
		"SHUTDOWN now",
		"env shutdown",
		// Programs capgate does not know as wrappers still run their arguments, and some
		// hand a string to a shell: a deny list reads every tail and every such string.
		"stdbuf -oL rm -rf /",
		"ionice -c 3 rm -rf /",
		"taskset -c 0 rm -rf /",
		"flock x.lock rm -rf /",
		"setsid rm -rf /",
		"chroot / rm -rf /",
		"su -c 'rm -rf /'",
		"su -c'rm -rf /'",
		"su --command='rm -rf /'",
		"flock x.lock -c 'ls; rm -rf /'",
		"ssh host 'cd /; rm -rf /'",
		"watch 'rm -rf /'",
		"script -c 'rm  -fr /'",
		// The safe side of a deny list: words that merely mention a denied command.
		"echo rm -rf /",
	}
	for _, cmd := range deniedByCommands {
		ok, rule := checkCommand(c, cmd)
		if ok || rule != token.RuleDeniedCommands && rule != token.RuleDeniedPatterns {
			t.Errorf("%q: ok=%v rule=%q, want denied", cmd, ok, rule)
		}
	}
	deniedByPatterns := []string{
		"sudo ls",
		"sudo -u root ls",
		"/usr/bin/sudo ls",
		"env sudo ls",
		"bash -c 'sudo ls'",
		"echo 'sudo'",
		"git push --force",
		"git push origin main --force",
		"git push --forc",
	}
	for _, cmd := range deniedByPatterns {
		if ok, rule := checkCommand(c, cmd); ok || rule != token.RuleDeniedPatterns {
			t.Errorf("%q: ok=%v rule=%q, want denied_patterns", cmd, ok, rule)
		}
	}
	allowed := []string{
		"rm file",
		"rm -r dir",
		"rm -f file",
		"rm -- -rf",
		"rm -i -r x -- -f",
		"ls -rf",
		"grep -rf patterns .",
		"shutdownd",
		"echo sudoers",
		"rmdir -p x",
	}
	for _, cmd := range allowed {
		if ok, rule := checkCommand(c, cmd); !ok {
			t.Errorf("%q: refused by %q", cmd, rule)
		}
	}
	// Refused because they cannot be checked: operators, and wrappers misused.
	unreadable := []string{
		"ls; rm -rf /",
		"ls && rm -rf /",
		"echo $(rm -rf /)",
		"bash -c 'ls; rm -rf /'",
		"bash -c 'r? -rf /'",
		"bash -c '/bin/r[m] -rf /'",
		"bash -c '{rm,-rf,/}'",
		"bash -c 'rm -rf ~'",
		"zsh -c '=rm -rf /'",
		"bash -c 'ls #'",
		"bash -c",
		"sudo --bogus rm -rf /",
		"env -Z rm -rf /",
		"timeout",
		"bash -c \"$(echo rm) -rf /\"",
		"bash -c 'echo \"$(rm -rf /)\"'",
	}
	for _, cmd := range unreadable {
		if ok, _ := checkCommand(c, cmd); ok {
			t.Errorf("%q: allowed, want refused", cmd)
		}
	}
	// sudo reads -h alone as --help, while the table reads it as taking a host, which would
	// misread the command after it: every tail of a wrapper's words is checked too.
	rmOnly := token.Constraints{DeniedCommands: []string{"rm -rf"}}
	for _, cmd := range []string{"sudo -h rm -rf /", "sudo -h rm -r -f /"} {
		if ok, rule := checkCommand(rmOnly, cmd); ok || rule != token.RuleDeniedCommands {
			t.Errorf("%q: ok=%v rule=%q, want denied_commands", cmd, ok, rule)
		}
	}
	// Nesting beyond MaxUnwrapDepth is refused, not left unchecked.
	deep := "ls"
	for range token.MaxUnwrapDepth + 1 {
		deep = "nice " + deep
	}
	if ok, rule := checkCommand(c, deep); ok || rule != token.ErrCommandTooNested.Error() {
		t.Errorf("deep nesting: %v %q", ok, rule)
	}
}

func TestAllowedCommands(t *testing.T) {
	c := token.Constraints{AllowedCommands: []string{"ps", "help", "ls -l", "/usr/bin/du", "sudo", "nice"}}
	for cmd, want := range map[string]bool{
		"ps":                          true,
		"ps aux":                      true,
		"help":                        true,
		"ls -l":                       true,
		"ls -l -a":                    true,
		"ls":                          false,
		"ls -a":                       false,
		"git -c core.pager=sh status": false,
		"/usr/bin/du -s":              true,
		"du -s":                       false,
		"/usr/bin/../bin/du":          false,
		"/usr/bin//du":                false,
		"/bin/ps":                     false,
		"./ps":                        false,
		"PS":                          false,
		"rm -rf /":                    false,
		"sudo ps":                     true,
		"sudo rm":                     false,
		"nice -n 5 sudo ps":           true,
		"env ps":                      false,
		"bash -c ps":                  false,
		"sudo bash -c ps":             false,
		"ps; rm":                      false,
		"X=1 ps":                      false,
	} {
		ok, rule := checkCommand(c, cmd)
		if ok != want {
			t.Errorf("%q: %v (%s), want %v", cmd, ok, rule, want)
		}
		if !ok && rule == "" {
			t.Errorf("%q: refused without a rule", cmd)
		}
	}
	// An allow-list that names a shell, git or make allows nothing by it: what they run is
	// code the list cannot read.
	sh := token.Constraints{AllowedCommands: []string{"bash", "ps", "git status", "make"}}
	for _, cmd := range []string{"bash -c ps", "bash -c 'ps aux'", "bash -c 'rm -rf /'", "bash -c 'PATH=/tmp ps'",
		"bash -c 'X=1'", "bash", "bash script.sh", "git status", "make"} {
		if ok, rule := checkCommand(sh, cmd); ok || rule != token.RuleInterpreter {
			t.Errorf("%q: %v (%s), want refused as an interpreter", cmd, ok, rule)
		}
	}
	// The document's example 1.
	doc := token.Constraints{AllowedCommands: []string{"ps", "help"}, DeniedPatterns: []string{"rm -rf", "sudo"}}
	for cmd, want := range map[string]bool{"ps": true, "help": true, "sudo ps": false, "ls": false} {
		if ok, _ := checkCommand(doc, cmd); ok != want {
			t.Errorf("example 1, %q: %v, want %v", cmd, ok, want)
		}
	}
}

func TestNoCommandConstraint(t *testing.T) {
	// A token without command constraints does not parse the command at all: the terminal
	// runs argv, and nothing in the token says what to refuse.
	if ok, rule := checkCommand(token.Constraints{}, "ls; rm -rf /"); !ok {
		t.Errorf("unconstrained token refused by %q", rule)
	}
	// Only what the capability classifies as a command is one: a param named "command"
	// is not checked for its name.
	c := token.Constraints{DeniedCommands: []string{"rm"}}
	if !c.Check(token.Input{Params: map[string]any{"command": "rm -rf /"}}).OK {
		t.Error("a param not classified as a command was checked as one")
	}
}
