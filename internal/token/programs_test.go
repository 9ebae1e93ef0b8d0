package token_test

import (
	"testing"

	"github.com/capgate/capgate/internal/token"
)

// Issue 15, point 2: with denied_commands ["rm"], a shell reading rm from its input, bash -s,
// python3 -c, perl -e and find -delete each deleted a file; with allowed_commands ["ls",
// "cat", "find", "echo"], find -exec rm and find -fprint did. Each is refused under any
// command constraint, and so are the other spellings an attacker tries.
func TestCommandConstraintsRefuseWhatTheyCannotSee(t *testing.T) {
	noRm := token.Constraints{DeniedCommands: []string{"rm"}}
	lsCatFindEcho := token.Constraints{AllowedCommands: []string{"ls", "cat", "find", "echo"}}
	wide := token.Constraints{AllowedCommands: []string{"ls", "cat", "find", "echo", "sed", "tar", "env", "timeout",
		"nice", "xargs", "sudo", "doas", "sort", "split", "rsync", "zip", "man", "time", "nohup", "exec", "command"}}
	for _, c := range []struct {
		name string
		tok  token.Constraints
		cmd  string
		rule string
	}{
		// The reproductions.
		{"sh reads rm from stdin", noRm, "sh", token.RuleInterpreter},
		{"bash -s", noRm, "bash -s", token.RuleInterpreter},
		{"python3 -c", noRm, `python3 -c "import os; os.remove('v2')"`, token.RuleInterpreter},
		{"perl -e", noRm, `perl -e "unlink 'v3'"`, token.RuleInterpreter},
		{"find -delete", noRm, "find . -name v4 -delete", token.RuleRunsByOpt},
		{"find -exec rm", lsCatFindEcho, "find . -name victim -exec rm {} +", token.RuleAllowedCommands},
		{"find -fprint", lsCatFindEcho, "find / -fprint /tmp/x", token.RuleRunsByOpt},
		// Other spellings of a shell.
		{"/usr/bin/SH", noRm, "/usr/bin/SH", token.RuleInterpreter},
		{"./sh", noRm, "./sh", token.RuleInterpreter},
		{"bash with a script", noRm, "bash script.sh", token.RuleInterpreter},
		{"dash", noRm, "dash -s", token.RuleInterpreter},
		{"zsh", noRm, "zsh", token.RuleInterpreter},
		{"busybox sh", noRm, "busybox sh", token.RuleInterpreter},
		{"busybox ash", noRm, "/bin/busybox ash -s", token.RuleInterpreter},
		{"env -S sh", noRm, "env -S 'sh -s'", token.RuleInterpreter},
		{"env sh", noRm, "env sh", token.RuleInterpreter},
		{"env -i sh", noRm, "env -i sh", token.RuleInterpreter},
		{"nice -n 5 sh", noRm, "nice -n 5 sh", token.RuleInterpreter},
		{"timeout 1 sh -s", noRm, "timeout 1 sh -s", token.RuleInterpreter},
		{"nohup bash", noRm, "nohup bash", token.RuleInterpreter},
		{"exec sh", noRm, "exec -a x sh", token.RuleInterpreter},
		{"xargs sh", noRm, "xargs -0 sh", token.RuleInterpreter},
		{"sudo -s", noRm, "sudo -s", token.RuleInterpreter},
		{"sudo -i", noRm, "sudo -i", token.RuleInterpreter},
		{"sudo --shell", noRm, "sudo --shell", token.RuleInterpreter},
		{"sudo -e", noRm, "sudo -e /etc/passwd", token.RuleInterpreter},
		{"doas -s", noRm, "doas -s", token.RuleInterpreter},
		{"sudo -s allowed", wide, "sudo -s", token.RuleInterpreter},
		{"sudo -h sh, misread", wide, "sudo -h sh -s", token.RuleInterpreter},
		{"timeout with a shell for a duration", wide, "timeout sh ls", token.RuleInterpreter},
		{"find -exec sh", noRm, `find . -exec sh -c 'unlink v' ';'`, token.RuleInterpreter},
		{"sh -c behind a deny-list", lsCatFindEcho, "sh -c ls", token.RuleInterpreter},
		// Interpreters, versioned and cased.
		{"python3.11", noRm, "python3.11 -c 'print(1)'", token.RuleInterpreter},
		{"Python3", noRm, "Python3 x.py", token.RuleInterpreter},
		{"/usr/bin/python3.11", noRm, "/usr/bin/python3.11", token.RuleInterpreter},
		{"pypy3", noRm, "pypy3 -c 1", token.RuleInterpreter},
		{"perl5.36", noRm, "perl5.36 -e 1", token.RuleInterpreter},
		{"ruby", noRm, "ruby -e 'File.delete(\"v\")'", token.RuleInterpreter},
		{"node", noRm, "node -e 1", token.RuleInterpreter},
		{"nodejs", noRm, "nodejs x.js", token.RuleInterpreter},
		{"php8.2", noRm, "php8.2 -r 1", token.RuleInterpreter},
		{"lua5.4", noRm, "lua5.4 -e 1", token.RuleInterpreter},
		{"tclsh8.6", noRm, "tclsh8.6", token.RuleInterpreter},
		{"awk", noRm, `awk 'BEGIN{system("unlink v")}'`, token.RuleInterpreter},
		{"gawk", noRm, "gawk -f x.awk", token.RuleInterpreter},
		{"mawk", noRm, "mawk 1", token.RuleInterpreter},
		{"Rscript", noRm, "Rscript -e 1", token.RuleInterpreter},
		{"expect", noRm, "expect -c 1", token.RuleInterpreter},
		{"pwsh", noRm, "pwsh -c 1", token.RuleInterpreter},
		{"osascript", noRm, "osascript -e 1", token.RuleInterpreter},
		{"dc", noRm, "dc", token.RuleInterpreter},
		{"ed", noRm, "ed file", token.RuleInterpreter},
		{"vim", noRm, "vim -c '!rm v' file", token.RuleInterpreter},
		{"sqlite3", noRm, "sqlite3 db", token.RuleInterpreter},
		{"gdb", noRm, "gdb -batch -ex 'shell unlink v'", token.RuleInterpreter},
		{"m4", noRm, "m4", token.RuleInterpreter},
		{"git -c", noRm, "git -c core.pager=sh log", token.RuleInterpreter},
		{"git status", noRm, "git status", token.RuleInterpreter},
		{"git alias", noRm, "git x", token.RuleInterpreter},
		{"make", noRm, "make", token.RuleInterpreter},
		{"gcc-12", noRm, "gcc-12 -wrapper sh x.c", token.RuleInterpreter},
		{"cross gcc", noRm, "x86_64-linux-gnu-gcc-12 x.c", token.RuleInterpreter},
		{"npm", noRm, "npm run x", token.RuleInterpreter},
		{"wget", noRm, "wget example.org", token.RuleInterpreter},
		{"the dynamic loader", noRm, "/lib64/ld-linux-x86-64.so.2 /bin/ls", token.RuleRunner},
		// Programs that run what capgate does not unwrap.
		{"stdbuf", noRm, "stdbuf -oL ls", token.RuleRunner},
		{"setsid", noRm, "setsid ls", token.RuleRunner},
		{"flock", noRm, "flock x.lock ls", token.RuleRunner},
		{"watch", noRm, "watch ls", token.RuleRunner},
		{"strace", noRm, "strace ls", token.RuleRunner},
		{"ssh", noRm, "ssh host ls", token.RuleRunner},
		{"scp", noRm, "scp -S sh a b", token.RuleRunner},
		{"script", noRm, "script -c ls", token.RuleRunner},
		{"socat", noRm, "socat - EXEC:sh", token.RuleRunner},
		{"su", noRm, "su -c ls", token.RuleRunner},
		{"chroot", noRm, "chroot / ls", token.RuleRunner},
		// The environment of an allowed program.
		{"env X=1", wide, "env X=1 ls", token.RuleEnvironment},
		{"env LD_PRELOAD", wide, "env LD_PRELOAD=./x.so ls", token.RuleEnvironment},
		{"env -S with an assignment", wide, "env -S 'LD_PRELOAD=x ls'", token.RuleEnvironment},
		{"sudo X=1", wide, "sudo PAGER=sh ls", token.RuleEnvironment},
		{"env -P", wide, "env -P /tmp ls", token.RuleRunsByOpt},
		// Options that run programs or write files.
		{"find -execdir rm", lsCatFindEcho, "find . -execdir rm {} ';'", token.RuleAllowedCommands},
		{"find -ok rm", lsCatFindEcho, "find . -ok rm {} ';'", token.RuleAllowedCommands},
		{"find -okdir rm", lsCatFindEcho, "find . -okdir rm {} ';'", token.RuleAllowedCommands},
		{"find -exec rm, denied", noRm, "find . -exec rm {} +", token.RuleDeniedCommands},
		{"find -exec /bin/rm, denied", noRm, "find . -exec /bin/rm -f {} ';'", token.RuleDeniedCommands},
		{"find twice", lsCatFindEcho, "find . -exec echo {} ';' -exec rm {} ';'", token.RuleAllowedCommands},
		{"find -exec without its end", lsCatFindEcho, "find . -exec rm {}", token.ErrCommandWrapper.Error()},
		{"find -delete, allowed find", lsCatFindEcho, "find . -delete", token.RuleRunsByOpt},
		{"find -fprint0", lsCatFindEcho, "find . -fprint0 out", token.RuleRunsByOpt},
		{"find -fprintf", lsCatFindEcho, "find . -fprintf out %p", token.RuleRunsByOpt},
		{"find -fls", lsCatFindEcho, "find . -fls out", token.RuleRunsByOpt},
		{"FIND", noRm, "/usr/bin/FIND . -delete", token.RuleRunsByOpt},
		{"sed e command", wide, "sed -e '1e rm v' f", token.RuleRunsByOpt},
		{"sed s///e", wide, "sed 's/x/rm v/e' f", token.RuleRunsByOpt},
		{"sed s///w", wide, "sed 's/x/y/w /tmp/out' f", token.RuleRunsByOpt},
		{"sed w", wide, "sed -n 'w /tmp/out' f", token.RuleRunsByOpt},
		{"sed W", wide, "sed '$W out' f", token.RuleRunsByOpt},
		{"sed r", wide, "sed '1r /etc/passwd' f", token.RuleRunsByOpt},
		{"sed R", wide, "sed 'R /etc/passwd' f", token.RuleRunsByOpt},
		{"sed w after a block", wide, "sed '/a/{p;w out\n}' f", token.RuleRunsByOpt},
		{"sed w after a label", wide, "sed ':a;w out' f", token.RuleRunsByOpt},
		{"sed w with another delimiter", wide, "sed 's|a|b|gw out' f", token.RuleRunsByOpt},
		{"sed w in a second -e", wide, "sed -e p -e 'w out' f", token.RuleRunsByOpt},
		{"sed --expression", wide, "sed --expression='1e rm v' f", token.RuleRunsByOpt},
		{"sed --exp abbreviated", wide, "sed --exp 'w out' f", token.RuleRunsByOpt},
		{"sed -ne", wide, "sed -ne 'w out' f", token.RuleRunsByOpt},
		{"sed -f", wide, "sed -f script f", token.RuleRunsByOpt},
		{"sed --file", wide, "sed --file=script f", token.RuleRunsByOpt},
		{"sed -f beside -e", wide, "sed -e p -f script f", token.RuleRunsByOpt},
		{"sed --file beside -e", wide, "sed -e p --file script f", token.RuleRunsByOpt},
		{"sed -e without its script", wide, "sed -e", token.RuleRunsByOpt},
		{"sed an unknown option", wide, "sed -Z p f", token.RuleRunsByOpt},
		{"sed an unterminated s", wide, "sed 's/a/b' f", token.RuleRunsByOpt},
		{"tar --to-command", wide, "tar -xf a.tar --to-command=sh", token.RuleRunsByOpt},
		{"tar --to-com", wide, "tar -xf a.tar --to-com sh", token.RuleRunsByOpt},
		{"tar -I", wide, "tar -I sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar -cIsh", wide, "tar -cIsh -f a.tar .", token.RuleRunsByOpt},
		{"tar --use-compress-program", wide, "tar --use-compress-program=sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar --use", wide, "tar --use=sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar old style I", wide, "tar cfI a.tar sh .", token.RuleRunsByOpt},
		{"tar --checkpoint-action", wide, "tar --checkpoint=1 --checkpoint-action=exec=sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar -F", wide, "tar -F sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar --info-script", wide, "tar --info-script=sh -cf a.tar .", token.RuleRunsByOpt},
		{"tar --rsh-command", wide, "tar --rsh-command=sh -cf h:a .", token.RuleRunsByOpt},
		{"tar a remote archive", wide, "tar -cf host:a.tar .", token.RuleRunsByOpt},
		{"tar a remote archive, old style", wide, "tar cf host:a.tar .", token.RuleRunsByOpt},
		{"tar --file remote", wide, "tar -c --file=host:a.tar .", token.RuleRunsByOpt},
		{"rsync -e", wide, "rsync -e sh a b", token.RuleRunsByOpt},
		{"rsync -ave", wide, "rsync -ave sh a b", token.RuleRunsByOpt},
		{"rsync --rsh", wide, "rsync --rsh=sh a b", token.RuleRunsByOpt},
		{"rsync --rsync-path", wide, "rsync --rsync-path=sh a b", token.RuleRunsByOpt},
		{"rsync a remote", wide, "rsync a host:b", token.RuleRunsByOpt},
		{"sort --compress-program", wide, "sort --compress-program=sh f", token.RuleRunsByOpt},
		{"sort --compress abbreviated", wide, "sort --compress=sh f", token.RuleRunsByOpt},
		{"split --filter", wide, "split --filter='rm v' f", token.RuleRunsByOpt},
		{"zip -TT", wide, "zip -T -TT 'rm v' a.zip f", token.RuleRunsByOpt},
		{"man -P", wide, "man -P sh ls", token.RuleRunsByOpt},
		{"man --html", wide, "man --html=sh ls", token.RuleRunsByOpt},
		{"xargs a shell", wide, "xargs -I{} sh -c ls", token.RuleInterpreter},
		{"time a shell", wide, "time sh", token.RuleInterpreter},
		{"command a shell", wide, "command sh", token.RuleInterpreter},
		// Other names of the programs, and programs capgate does not know that run their
		// arguments: without an allow-list, a word naming a shell is refused wherever it is.
		{"gxargs", noRm, "gxargs sh", token.RuleInterpreter},
		{"gxargs allowed", token.Constraints{AllowedCommands: []string{"gxargs", "ls"}}, "gxargs -0 sh", token.RuleInterpreter},
		{"gtimeout", noRm, "gtimeout 1 bash -s", token.RuleInterpreter},
		{"toybox sh", noRm, "toybox sh", token.RuleInterpreter},
		{"an unknown runner", noRm, "mywrap -u x bash -s", token.RuleInterpreter},
		{"an unknown runner of a runner", noRm, "mystery setsid ls", token.RuleRunner},
		{"a shell as a word", noRm, "echo bash", token.RuleInterpreter},
		{"gsed w", wide, "gsed 'w out' f", token.RuleRunsByOpt},
		{"gsed w, deny-list", noRm, "gsed 'w out' f", token.RuleRunsByOpt},
		{"bsdtar -I", noRm, "bsdtar -I sh -cf a.tar .", token.RuleRunsByOpt},
		{"gfind -delete", noRm, "gfind . -delete", token.RuleRunsByOpt},
		{"vim.tiny", noRm, "vim.tiny -c '!ls' f", token.RuleInterpreter},
		{"busybox.static sh", noRm, "busybox.static sh", token.RuleInterpreter},
		{"busybox.static sh, allowed", token.Constraints{AllowedCommands: []string{"busybox.static"}}, "busybox.static sh", token.RuleInterpreter},
		{"sh.distrib", noRm, "/bin/sh.distrib -s", token.RuleInterpreter},
		{"git-shell", noRm, "git-shell -c ls", token.RuleInterpreter},
		{"git-upload-pack", noRm, "git-upload-pack .", token.RuleInterpreter},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, rule := checkCommand(c.tok, c.cmd)
			if ok || rule != c.rule {
				t.Fatalf("%q: ok=%v rule=%q, want %q", c.cmd, ok, rule, c.rule)
			}
		})
	}

	// What the lists allow still runs.
	for _, cmd := range []string{
		"ls", "ls -la", "cat f", "echo hi", "find . -name x", "find . -name '*.go' -print",
		"find . -exec cat {} ';'", "find . -exec echo {} +", "find . -type f -execdir echo {} ';'",
		"sed -n 1p f", "sed 's/a/b/g' f", "sed -i.bak 's/a\\/b/c/;p' f", "sed -E -e 's/x/y/2' -e '$d' f", "sed '/x/,+2{p;d}' f",
		"sed '1i\\\nhello' f", "sed 'a text; w not a command' f", "sed -n '/a/I,$p' f", "sed 'y/abc/xyz/' f", "sed '0~3d' f",
		"sed --sandbox -n p f", "sed ':a;N;$!ba;s/\\n/ /g' f", "sed 's/w/e/' f",
		"tar -czf out.tgz dir", "tar xf a.tar", "tar cvf a.tar .", "tar --force-local -cf c:a.tar .", "tar --checkpoint=10 -cf a.tar .",
		"tar -C dir -xf a.tar", "tar --to-stdout -xf a.tar",
		"env -i ls", "env -u HOME ls", "env -- ls", "timeout 5 ls", "nice -n 5 ls", "xargs echo", "sudo ls", "doas ls",
		"sort -o out f", "split -l 10 f", "rsync -a a b", "zip -r a.zip d", "man ls", "time ls", "nohup ls", "exec ls", "command ls",
	} {
		if ok, rule := checkCommand(wide, cmd); !ok {
			t.Errorf("%q: refused by %q", cmd, rule)
		}
	}
	for _, cmd := range []string{"ls", "cat /etc/hostname", "find . -name victim", "echo hi", "echo meet at noon", "grep -r go .", "echo watch out"} {
		if ok, rule := checkCommand(noRm, cmd); !ok {
			t.Errorf("deny-list, %q: refused by %q", cmd, rule)
		}
	}
}

// write_input's input feeds a program that is already running, perhaps a shell: no
// constraint can read it, so a token with path or command constraints refuses it, and one
// without any lets it through.
func TestCommandInputRefused(t *testing.T) {
	in := token.Input{Permission: "app.terminal.write_input", CommandInput: true}
	for _, c := range []token.Constraints{
		{DeniedCommands: []string{"rm"}}, {AllowedCommands: []string{"ls"}}, {DeniedPatterns: []string{"sudo"}},
		{AllowedPaths: []string{"/srv/ws/**"}},
	} {
		if v := c.Check(in); v.OK || v.Rule != token.RuleCommandInput {
			t.Errorf("%+v: %+v", c, v)
		}
	}
	if v := (token.Constraints{MaxUses: 3}).Check(in); !v.OK {
		t.Errorf("a token without path or command constraints refused command input: %+v", v)
	}
}

// A capability whose params are not all classified is refused by a token with path or
// command constraints, whatever the params hold.
func TestUnclassifiedRefused(t *testing.T) {
	in := token.Input{Permission: "mcp.fs.move_file", Unclassified: true}
	for _, c := range []token.Constraints{{DeniedCommands: []string{"rm"}}, {AllowedPaths: []string{"/srv/ws/**"}}} {
		if v := c.Check(in); v.OK || v.Rule != token.RuleUnclassified {
			t.Errorf("%+v: %+v", c, v)
		}
	}
	if v := (token.Constraints{Condition: "true"}).Check(in); !v.OK {
		t.Errorf("a condition alone refused an unclassified capability: %+v", v)
	}
}

func TestProgramTablesAgree(t *testing.T) {
	// Every wrapper that is a shell is an interpreter too.
	for _, name := range []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"} {
		if ok, rule := checkCommand(token.Constraints{DeniedCommands: []string{"x"}}, name+" -c ls"); ok || rule != token.RuleInterpreter {
			t.Errorf("%s -c ls: %v %q", name, ok, rule)
		}
	}
}
