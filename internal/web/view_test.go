package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/consent"
)

func TestSplitURL(t *testing.T) {
	for _, c := range []struct {
		in, before, host, after string
		lookalike               bool
		flag                    string // a flag that must be among the flags ("" none at all)
	}{
		{"https://example.com/a?b=c", "https://", "example.com", "/a?b=c", false, ""},
		{"http://example.com:8080", "http://", "example.com", ":8080", false, ""},
		{"https://[::1]:7766/ui/", "https://", "[::1]", ":7766/ui/", false, ""},
		{"https://аpple.com/login", "https://", "аpple.com", "/login", true, "letters from more than one script in one word: Latin, Cyrillic"},
		{"https://аррӏе.com/", "https://", "аррӏе.com", "/", true, "characters that are not plain ASCII"},
		{"https://xn--pple-43d.com/", "https://", "xn--pple-43d.com", "/", true, "punycode (xn--): the name is shown encoded and may spell something else"},
		{"https://paypal.com@evil.example/x", "https://paypal.com@", "evil.example", "/x", false, "the text before @ is not where this goes: it goes to evil.example"},
		{"https://аpple.com@evil.example/", "https://аpple.com@", "evil.example", "/", false, "not a well-formed address"},
		{"https://ехample.com", "https://", "ехample.com", "", true, "characters that are not plain ASCII"},
		{"javascript:alert(1)", "javascript:alert(1)", "", "", false, "a script or data address, not a web site"},
		{"ftp://files.example/", "ftp://", "files.example", "/", false, "not a web address: ftp"},
		{"https://ｅxample.com/", "https://", "ｅxample.com", "/", true, consent.FlagForms},
		{"https://раураl.com/", "https://", "раураl.com", "/", true, "letters from more than one script in one word: Latin, Cyrillic"},
		{"https://рарра.com/", "https://", "рарра.com", "/", true, "a word written in letters that look like Latin ones but are Cyrillic"},
	} {
		v := splitURL(c.in)
		if v.Before != c.before || v.Host != c.host || v.After != c.after || v.Lookalike != c.lookalike {
			t.Errorf("%s: %q %q %q lookalike %v, want %q %q %q %v", c.in, v.Before, v.Host, v.After, v.Lookalike, c.before, c.host, c.after, c.lookalike)
		}
		if c.flag == "" && len(v.Flags) > 0 || c.flag != "" && !slices.Contains(v.Flags, c.flag) {
			t.Errorf("%s: flags %q, want %q", c.in, v.Flags, c.flag)
		}
	}
}

func TestRevealAndParams(t *testing.T) {
	if got := reveal("a\u202eb\u200bc\x1bd\ne", false); got != `a\u202eb\u200bc\u001bd\u000ae` {
		t.Errorf("reveal: %q", got)
	}
	if got := reveal("tag\U000E0041 fill\u3164 ok", false); got != `tag\U000e0041 fill\u3164 ok` {
		t.Errorf("reveal of tags and fillers: %q", got)
	}
	if got := reveal("a\ne\tf", true); got != "a\ne\tf" {
		t.Errorf("reveal multiline: %q", got)
	}
	text, urls := showParams([]byte(`{"b":"\u202ex","a":["see https://xn--80ak6aa92e.com/ and https://example.org"],"html":"<b>&"}`))
	if strings.ContainsRune(text, '\u202e') || !strings.Contains(text, `"\u202ex"`) || !strings.Contains(text, `"<b>&"`) ||
		!strings.HasPrefix(text, "{\n  \"a\"") {
		t.Errorf("params text:\n%s", text)
	}
	if len(urls) != 2 || urls[0].Host != "xn--80ak6aa92e.com" || !urls[0].Lookalike || urls[1].Host != "example.org" || urls[1].Lookalike {
		t.Errorf("urls: %+v", urls)
	}
}
