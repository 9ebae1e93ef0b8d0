package toolserver

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// showableURL takes an http or https address with a host and nothing that passes for
// another: no user information, no control characters, no other scheme, nothing past
// MaxURLBytes.
func TestShowableURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://login.example.com/authorize?state=1": true,
		"http://127.0.0.1:8080/cb":                    true,
		"HTTPS://login.example.com/":                  true,
		"https://l\u043egin.example.com/":             true, // shown, its look-alike flagged by the page
		"":                                            false,
		"javascript:alert(1)":                         false,
		"data:text/html,<script>x</script>":           false,
		"file:///etc/passwd":                          false,
		"https://user:pass@login.example.com/":        false,
		"https://login.example.com@evil.example/":     false,
		"https:///path-only":                          false,
		"//login.example.com/":                        false,
		"https://login.example.com/\u0000":            false,
		"https://login.example.com/\n":                false,
		"https://login.example.com/\u0085":            false,
		"https://login.example.com/\xff":              false,
		"https://login.example.com/" + strings.Repeat("a", MaxURLBytes): false,
	} {
		if got := showableURL(u); got != want {
			t.Errorf("showableURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func FuzzShowableURL(f *testing.F) {
	for _, s := range []string{"https://login.example.com/a?b=c", "javascript:alert(1)", "https://u:p@h/", "http://h/\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !showableURL(s) {
			return
		}
		p, err := url.Parse(s)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.User != nil || p.Host == "" || len(s) > MaxURLBytes || !utf8.ValidString(s) {
			t.Fatalf("showableURL took %q", s)
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("showableURL took %q, with a control character", s)
			}
		}
	})
}
