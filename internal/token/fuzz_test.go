package token_test

import (
	"crypto/ed25519"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/token"
)

func FuzzParse(f *testing.F) {
	key := testKey(1)
	for _, tok := range []token.Token{fixedToken(), minimalToken()} {
		w, err := token.Sign(tok, key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(w)
	}
	if b, err := os.ReadFile("testdata/token.wire"); err == nil {
		f.Add(strings.TrimSpace(string(b)))
	}
	f.Add("cgt1.")
	f.Add("cgt1.e30")
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 8)
	f.Fuzz(func(t *testing.T, wire string) {
		tok, err := token.Parse(wire)
		if err != nil {
			if !errors.Is(err, token.ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// What parses is canonical: encoding it again gives the same wire form.
		b, err := tok.Canonical(true)
		if err != nil {
			t.Fatalf("a parsed token does not encode: %v", err)
		}
		if encode(b) != wire {
			t.Fatalf("a parsed token encodes to another wire form")
		}
		if _, err := v.Verify(wire); err != nil && !errors.Is(err, token.ErrBadSignature) {
			t.Fatalf("Verify of a parsed token: %v", err)
		}
	})
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{
		"rm -rf /", `"rm" -rf /`, `r\m -rf`, `echo 'it'\''s'`, `echo "a\"b\\c\d"`, "bash -c 'rm -rf /'",
		"env -S 'rm -rf' /", "echo ''", "a\tb", `"`, `'`, `\`, "é \xff", "x\x00", "ls; rm", "$(x)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv, err := token.SplitCommand(s)
		// Checking never panics, whatever the command.
		c := token.Constraints{DeniedCommands: []string{"rm -rf"}, AllowedCommands: []string{"ls", "bash"}}
		c.Check(commandInput(s))
		(token.Constraints{AllowedPaths: []string{"/srv/**"}}).Check(commandInput(s))
		if err != nil {
			return
		}
		again, err := token.SplitCommand(token.QuoteCommand(argv))
		if err != nil {
			t.Fatalf("the quoted form of %q does not split: %v", argv, err)
		}
		if !slices.Equal(argv, again) {
			t.Fatalf("round trip: %q became %q", argv, again)
		}
	})
}

// FuzzDeniedCommand builds commands that run rm with -r and -f in some spelling, among other
// words and behind wrappers, and checks that the denied "rm -rf" matches each.
func FuzzDeniedCommand(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{9, 200, 17, 5, 77, 31})
	f.Add([]byte{255, 254, 253, 252, 251, 250, 249, 248})
	programs := []string{"rm", "/bin/rm", "./rm", "/usr/bin/../bin/rm", `"rm"`, `r\m`, `'r'm`, "RM"}
	rFlags := []string{"-r", "-R", "--recursive", "--rec", "--r"}
	fFlags := []string{"-f", "--force", "--fo"}
	clusters := []string{"-rf", "-fr", "-Rf", "-fR", "-vrf", "-rfv", "-frv", "-irf"}
	others := []string{"/", "x", "-v", "-i", "--verbose", "'a b'", `"c d"`, "--one-file-system", "."}
	wrappers := []string{"sudo", "sudo -u root", "env", "env X=1", "env -i A=b", "nice", "nice -n 5", "nohup",
		"timeout 5", "timeout -s KILL 5", "time", "time -p", "exec", "command", "builtin", "busybox", "doas", "xargs", "xargs -0"}
	c := token.Constraints{DeniedCommands: []string{"rm -rf"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func(n int) int {
			if len(b) == 0 {
				return 0
			}
			v := int(b[0]) % n
			b = b[1:]
			return v
		}
		var words []string
		if next(2) == 0 {
			words = append(words, clusters[next(len(clusters))])
		} else {
			words = append(words, rFlags[next(len(rFlags))], fFlags[next(len(fFlags))])
		}
		for range next(4) {
			words = append(words, others[next(len(others))])
		}
		// Shuffle: GNU rm reads its flags anywhere before "--".
		for i := len(words) - 1; i > 0; i-- {
			j := next(i + 1)
			words[i], words[j] = words[j], words[i]
		}
		cmd := programs[next(len(programs))] + " " + strings.Join(words, " ")
		for range next(3) {
			cmd = wrappers[next(len(wrappers))] + " " + cmd
		}
		if next(3) == 0 {
			cmd = "bash -c " + token.QuoteCommand([]string{cmd})
		}
		v := c.Check(commandInput(cmd))
		ok, rule := v.OK, v.Rule
		if ok {
			t.Fatalf("%q was not denied", cmd)
		}
		if rule != token.RuleDeniedCommands {
			t.Fatalf("%q refused by %q, want denied_commands", cmd, rule)
		}
	})
}

// FuzzCommandRules: checking any command under command and path constraints never panics;
// a command whose program, or a program behind a wrapper, is a shell or an interpreter is
// refused under every constraint, however it is spelled.
func FuzzCommandRules(f *testing.F) {
	for _, s := range []string{
		"ls -la", "find . -exec rm {} +", "tar -cIsh -f a .", "sed 's/a/b/w x' f", "env -S 'sh -s'",
		"nice -n 5 sh", "timeout 1 sh -s", "sudo -s", "xargs sh", "rsync -ave sh a b", "cat ../x",
	} {
		f.Add(s, uint8(0))
	}
	shells := []string{"sh", "/usr/bin/SH", "./bash", "python3.11", "Perl5.36", "awk", "busybox sh", "git", "make"}
	wrappers := []string{"", "env ", "nice -n 5 ", "timeout 1 ", "nohup ", "sudo ", "xargs ", "find . -exec "}
	consts := []token.Constraints{
		{DeniedCommands: []string{"rm"}},
		{AllowedCommands: []string{"ls", "cat", "find", "echo", "env", "nice", "timeout", "nohup", "sudo", "xargs", "sh", "python3.11", "awk", "git", "make", "busybox"}},
		{AllowedPaths: []string{"/srv/ws/**"}},
	}
	f.Fuzz(func(t *testing.T, s string, pick uint8) {
		for _, c := range consts {
			c.Check(commandInput(s))
		}
		cmd := wrappers[int(pick)%len(wrappers)] + shells[int(pick/8)%len(shells)] + " " + s
		if strings.HasPrefix(cmd, "find") {
			cmd += " ';'"
		}
		for _, c := range consts {
			if c.Check(commandInput(cmd)).OK {
				t.Fatalf("%+v allowed %q", c, cmd)
			}
		}
	})
}

// ParseWireHash takes exactly what WireHash writes: whatever it accepts prints back as the
// same text, and every digest's text is accepted as that digest.
func FuzzParseWireHash(f *testing.F) {
	f.Add(token.WireHash("cgt1.x"))
	f.Add("sha256:" + strings.Repeat("A", 64))
	f.Add("sha256:" + strings.Repeat("0", 63))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := token.ParseWireHash(s)
		if !ok {
			if d != (token.Digest{}) {
				t.Fatalf("refused %q, yet gave a digest", s)
			}
			return
		}
		if d.String() != s {
			t.Fatalf("accepted %q, which prints back as %q", s, d.String())
		}
		if again, ok := token.ParseWireHash(token.WireDigest(s).String()); !ok || again != token.WireDigest(s) {
			t.Fatalf("a digest's own text is refused")
		}
	})
}
