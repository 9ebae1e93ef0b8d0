package toolserver

import (
	"encoding/json"
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

// FuzzFormFields reads arbitrary schemas as forms: no panic; a form read has 1 to
// MaxFormFields fields of the four types, each name once; and an answer ParseFormAnswer
// gives for it is one checkAnswer takes back.
func FuzzFormFields(f *testing.F) {
	f.Add(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, "name=Ayşe")
	f.Add(`{"type":"object","properties":{"n":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"string","enum":["a","b"]}}}`, "n=3&b=true&c=a")
	f.Add(`{"type":"object","properties":{"x":{"type":"number"}},"required":["y"]}`, "x=1e3")
	f.Add(`{"type":"array"}`, "")
	f.Fuzz(func(t *testing.T, schema, answer string) {
		var v any
		if json.Unmarshal([]byte(schema), &v) != nil {
			return
		}
		fields, why := formFields(v)
		if why != "" {
			if fields != nil {
				t.Fatal("fields with a refusal")
			}
			return
		}
		if len(fields) == 0 || len(fields) > MaxFormFields {
			t.Fatalf("%d fields", len(fields))
		}
		seen := map[string]bool{}
		for _, fl := range fields {
			switch fl.Type {
			case FieldString, FieldNumber, FieldInteger, FieldBoolean:
			default:
				t.Fatalf("type %q", fl.Type)
			}
			if seen[fl.Name] {
				t.Fatalf("%q twice", fl.Name)
			}
			seen[fl.Name] = true
		}
		texts := map[string]string{}
		for _, kv := range strings.Split(answer, "&") {
			k, val, _ := strings.Cut(kv, "=")
			texts[k] = val
		}
		content, err := ParseFormAnswer(fields, texts)
		if err != nil {
			return
		}
		raw, _ := json.Marshal(content)
		var back map[string]any
		if json.Unmarshal(raw, &back) != nil || !checkAnswer(fields, back) {
			t.Fatalf("an answer ParseFormAnswer gave is refused: %s", raw)
		}
	})
}
