package intent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathRuleAccepted(t *testing.T) {
	prot := Host{Protected: []string{"/sandbox/.capgate"}}
	for _, tc := range []struct {
		name, path string
		h          Host
	}{
		{"data", "/sandbox/data", Host{}},
		{"root itself", "/sandbox", Host{}},
		{"deep", "/sandbox/a/b/c.txt", Host{}},
		{"nfc", "/sandbox/\u00e9", Host{}},
		{"space", "/sandbox/my notes", Host{}},
		{"dot prefix", "/sandbox/.hidden", Host{}},
		{"dots in name", "/sandbox/..a/a..", Host{}},
		{"three dots", "/sandbox/...", Host{}},
		{"sibling of protected", "/sandbox/.capgate-x", prot},
		{"protected as inner name", "/sandbox/x/.capgate", prot},
		{"custom root", "/srv/box/x", Host{SandboxRoot: "/srv/box"}},
		{"longest segment", "/sandbox/" + strings.Repeat("s", 255), Host{}},
		{"longest path", "/sandbox" + strings.Repeat("/"+strings.Repeat("p", 99), 40) + "/" + strings.Repeat("q", 87), Host{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.path) > MaxPathBytes {
				t.Fatalf("test path is %d bytes", len(tc.path))
			}
			if rule := PathRule(tc.path, tc.h); rule != "" {
				t.Fatalf("refused: %s", rule)
			}
		})
	}
}

func TestPathRuleRefused(t *testing.T) {
	known := knownPathRules()
	prot := Host{Protected: []string{"/sandbox/.capgate", "cache/"}}
	for _, tc := range []struct {
		name, path string
		h          Host
		want       string
	}{
		{"dot-dot", "/sandbox/../etc", Host{}, rulePathDotSegment},
		{"trailing dot-dot", "/sandbox/x/..", Host{}, rulePathDotSegment},
		{"dot", "/sandbox/./x", Host{}, rulePathDotSegment},
		{"trailing dot", "/sandbox/.", Host{}, rulePathDotSegment},
		{"doubled slash", "/sandbox//x", Host{}, rulePathEmptySegment},
		{"trailing slash", "/sandbox/x/", Host{}, rulePathEmptySegment},
		{"root with slash", "/sandbox/", Host{}, rulePathEmptySegment},
		{"leading doubled slash", "//sandbox/x", Host{}, rulePathEmptySegment},
		{"prefix not segment", "/sandboxed/x", Host{}, rulePathOutside},
		{"outside", "/etc/passwd", Host{}, rulePathOutside},
		{"slash", "/", Host{}, rulePathOutside},
		{"other root", "/sandbox/x", Host{SandboxRoot: "/srv/box"}, rulePathOutside},
		{"relative", "relative/x", Host{}, rulePathAbsolute},
		{"relative sandbox", "sandbox/x", Host{}, rulePathAbsolute},
		{"nfd", "/sandbox/e\u0301", Host{}, rulePathNFC},
		{"nfd hangul", "/sandbox/\u1100\u1161", Host{}, rulePathNFC},
		{"rlo", "/sandbox/a\u202eb", Host{}, rulePathBidi},
		{"rli", "/sandbox/a\u2067b", Host{}, rulePathBidi},
		{"rlm", "/sandbox/a\u200fb", Host{}, rulePathBidi},
		{"alm", "/sandbox/a\u061cb", Host{}, rulePathBidi},
		{"zero width space", "/sandbox/a\u200bb", Host{}, rulePathZeroWidth},
		{"zero width joiner", "/sandbox/a\u200db", Host{}, rulePathZeroWidth},
		{"bom", "/sandbox/\ufeffa", Host{}, rulePathZeroWidth},
		{"word joiner", "/sandbox/a\u2060b", Host{}, rulePathZeroWidth},
		{"nul", "/sandbox/a\x00b", Host{}, rulePathNUL},
		{"nul truncating", "/sandbox/x\x00/../../etc", Host{}, rulePathNUL},
		{"backslash", `/sandbox/a\b`, Host{}, rulePathBackslash},
		{"backslash dot-dot", `/sandbox/..\..\etc`, Host{}, rulePathBackslash},
		{"invalid utf8", "/sandbox/a\xffb", Host{}, rulePathUTF8},
		{"overlong slash", "/sandbox/a\xc0\xafb", Host{}, rulePathUTF8},
		{"surrogate", "/sandbox/a\xed\xa0\x80b", Host{}, rulePathUTF8},
		{"replacement", "/sandbox/a\ufffdb", Host{}, rulePathReplacement},
		{"newline", "/sandbox/a\nb", Host{}, rulePathPrintable},
		{"escape", "/sandbox/a\x1b[2Jb", Host{}, rulePathPrintable},
		{"del", "/sandbox/a\x7fb", Host{}, rulePathPrintable},
		{"nbsp", "/sandbox/a\u00a0b", Host{}, rulePathPrintable},
		{"line separator", "/sandbox/a\u2028b", Host{}, rulePathPrintable},
		{"c1 control", "/sandbox/a\u0085b", Host{}, rulePathPrintable},
		{"private use", "/sandbox/a\ue000b", Host{}, rulePathPrintable},
		{"empty", "", Host{}, rulePathEmpty},
		{"too long", "/sandbox" + strings.Repeat("/abcdefgh", 500), Host{}, rulePathLength},
		{"long segment", "/sandbox/" + strings.Repeat("s", 256), Host{}, rulePathSegment},
		{"protected", "/sandbox/.capgate", prot, rulePathProtected},
		{"inside protected", "/sandbox/.capgate/keys/signing.key", prot, rulePathProtected},
		{"relative protected entry", "/sandbox/cache/x", prot, rulePathProtected},
		{"relative root", "/sandbox/x", Host{SandboxRoot: "sandbox"}, rulePathBadRoot},
		{"root with trailing slash", "/sandbox/x", Host{SandboxRoot: "/sandbox/"}, rulePathBadRoot},
		{"root unclean", "/sandbox/x", Host{SandboxRoot: "/a/../sandbox"}, rulePathBadRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, tc.path, PathRule(tc.path, tc.h), tc.want, "", known)
		})
	}
}

// TestPathRuleOnDisk builds a sandbox in a temporary directory with links out of it and into
// a protected mount.
func TestPathRuleOnDisk(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "sandbox")
	outside := filepath.Join(tmp, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "inner", "deep"), filepath.Join(root, ".capgate"), filepath.Join(outside, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(root, "escape"):      outside,
		filepath.Join(root, "escape-rel"):  "../outside",
		filepath.Join(root, "to-etc"):      "/etc",
		filepath.Join(root, "to-prot"):     filepath.Join(root, ".capgate"),
		filepath.Join(root, "to-prot-rel"): ".capgate",
		filepath.Join(root, "to-inner"):    "inner",
		filepath.Join(root, "inner", "up"): "..",
		filepath.Join(root, "dangling"):    filepath.Join(tmp, "not-there"),
		filepath.Join(root, "loop"):        "loop",
		filepath.Join(tmp, "rootlink"):     root,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	h := Host{SandboxRoot: root, Protected: []string{filepath.Join(root, ".capgate")}, ResolveOnDisk: true}
	viaLink := h
	viaLink.SandboxRoot = filepath.Join(tmp, "rootlink")
	viaLink.Protected = []string{filepath.Join(tmp, "rootlink", ".capgate")}

	for _, tc := range []struct {
		name, path string
		h          Host
	}{
		{"root", root, h},
		{"real dir", root + "/inner/deep", h},
		{"not yet there", root + "/new/file.txt", h},
		{"link inside", root + "/to-inner/deep", h},
		{"link to parent inside", root + "/inner/up/inner", h},
		{"root through a link", viaLink.SandboxRoot + "/inner/deep", viaLink},
		{"lexical only", root + "/escape/x", Host{SandboxRoot: root}},
	} {
		t.Run("accepted/"+tc.name, func(t *testing.T) {
			if rule := PathRule(tc.path, tc.h); rule != "" {
				t.Fatalf("refused: %s", rule)
			}
		})
	}

	known := knownPathRules()
	for _, tc := range []struct {
		name, path string
		h          Host
		want       string
	}{
		{"escape", root + "/escape", h, rulePathDiskOutside},
		{"escape deeper", root + "/escape/x", h, rulePathDiskOutside},
		{"escape deeper missing", root + "/escape/missing/file", h, rulePathDiskOutside},
		{"escape relative", root + "/escape-rel/x", h, rulePathDiskOutside},
		{"to etc", root + "/to-etc/passwd", h, rulePathDiskOutside},
		{"into protected", root + "/to-prot/key", h, rulePathDiskProt},
		{"into protected relative", root + "/to-prot-rel", h, rulePathDiskProt},
		{"up and out", root + "/inner/up/escape", h, rulePathDiskOutside},
		{"dangling", root + "/dangling", h, rulePathDiskLink},
		{"loop", root + "/loop/x", h, rulePathDiskLink},
		{"protected through root link", viaLink.SandboxRoot + "/to-prot", viaLink, rulePathDiskProt},
		{"root missing", "/nonexistent-capgate-root/x", Host{SandboxRoot: "/nonexistent-capgate-root", ResolveOnDisk: true}, rulePathDiskRoot},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			assertRefusal(t, tc.path, PathRule(tc.path, tc.h), tc.want, "", known)
		})
	}
}
