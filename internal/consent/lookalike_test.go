package consent_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/consent"
)

// The look-alike check flags what an attacker would write to pass one text for another,
// in every spelling tried, and leaves ordinary text in any one script alone.
func TestLookalikes(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		flag     string // a flag that must be raised; "" for none at all
		shown    string // a word that must be shown, escaped
	}{
		{"ascii", "Publish this week's meeting notes to https://example.com/x", "", ""},
		{"french", "Supprimer le brouillon — il est obsolète, déjà copié", "", ""},
		{"russian", "Удалить черновик: он устарел", "", ""},
		{"russian with a short latin-like word", "Скопируй файл с диска и сохрани", "", ""},
		{"greek", "Διαγραφή του πρόχειρου", "", ""},
		{"japanese", "ファイルを削除します", "", ""},
		{"korean with han", "파일을 削除 합니다", "", ""},
		{"emoji", "tidy the downloads 🧹 ✨", "", ""},
		{"superscripts and ordinals", "clear 5 m² of the 1º floor", "", ""},
		{"cyrillic a in a latin word", "log in to pаypal now", "letters from more than one script in one word: Latin, Cyrillic", `p\u0430ypal`},
		{"greek omicron in a latin word", "approve gοogle", "letters from more than one script in one word: Latin, Greek", `g\u03bfogle`},
		{"cyrillic word that reads as latin", "send it to раура today", "a word written in letters that look like Latin ones but are Cyrillic", `\u0440\u0430\u0443\u0440\u0430`},
		{"cyrillic host label", "https://аррӏе.com/login", "a word written in letters that look like Latin ones but are Cyrillic", ""},
		{"mixed within a URL", "https://аpple.com@evil.example/", "letters from more than one script in one word: Latin, Cyrillic", `\u0430pple`},
		{"armenian", "see օpen.example", "letters from more than one script in one word: Latin, Armenian", ""},
		{"cherokee", "ᏴᎪᏁK", "letters from more than one script in one word: Latin, Cherokee", ""},
		{"zero-width space", "pay\u200bpal", consent.FlagInvisible, `pay\u200bpal`},
		{"word joiner", "ad\u2060min", consent.FlagInvisible, ""},
		{"tag characters", "ok\U000E0041\U000E0042", consent.FlagInvisible, `ok\U000e0041\U000e0042`},
		{"hangul filler", "approve \u3164 now", consent.FlagInvisible, `\u3164`},
		{"soft hyphen", "pay\u00adpal", consent.FlagInvisible, ""},
		{"right-to-left override", "invoice\u202egnp.exe", consent.FlagBidi, `invoice\u202egnp`},
		{"isolate", "a \u2067b\u2069", consent.FlagBidi, ""},
		{"fullwidth", "ｐaypal", consent.FlagForms, `\uff50aypal`},
		{"mathematical bold", "𝐩aypal", consent.FlagForms, `\U0001d429aypal`},
		{"division slash", "example.com∕login", consent.FlagForms, `com\u2215login`},
		{"fullwidth solidus", "a／b", consent.FlagForms, ""},
		{"armenian full stop as colon", "https։//example.com", consent.FlagForms, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := consent.Lookalikes(tc.in)
			if tc.flag == "" {
				if !l.OK() {
					t.Errorf("ordinary text flagged: %q %q", l.Flags, l.Shown)
				}
				return
			}
			if !slices.Contains(l.Flags, tc.flag) {
				t.Errorf("flags %q, want %q", l.Flags, tc.flag)
			}
			if tc.shown != "" && !slices.Contains(l.Shown, tc.shown) {
				t.Errorf("shown %q, want %q", l.Shown, tc.shown)
			}
			for _, s := range l.Shown {
				if strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c >= 0x7f }) {
					t.Errorf("a shown word is not plain ASCII: %q", s)
				}
			}
		})
	}
}

// A long hostile text shows a few words, not all of it.
func TestLookalikesShowFew(t *testing.T) {
	l := consent.Lookalikes(strings.Repeat("pаypal"+strings.Repeat("x", 200)+" ", 50))
	if len(l.Flags) != 1 || len(l.Shown) != 1 || len(l.Shown[0]) > 100 {
		t.Errorf("flags %q shown %q", l.Flags, l.Shown)
	}
	l = consent.Lookalikes("pаy1 pаy2 pаy3 pаy4 pаy5 pаy6 pаy7")
	if len(l.Shown) != 5 {
		t.Errorf("shown %q", l.Shown)
	}
}

// Whatever the text, the check returns, and what it shows is plain ASCII; plain ASCII is
// never flagged.
func FuzzLookalikes(f *testing.F) {
	for _, s := range []string{"pаypal", "ｐaypal", "a\u202eb", "ファイル", "https://аpple.com@x/", "\xff\xfe", "𝐩"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := consent.Lookalikes(s)
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] < utf8.RuneSelf
		}
		if ascii && !l.OK() {
			t.Fatalf("ASCII %q flagged: %q", s, l.Flags)
		}
		if l.OK() && len(l.Shown) > 0 {
			t.Fatalf("words shown without a flag: %q", l.Shown)
		}
		for _, w := range l.Shown {
			for i := 0; i < len(w); i++ {
				if w[i] < 0x20 || w[i] >= 0x7f {
					t.Fatalf("shown word %q is not printable ASCII", w)
				}
			}
		}
	})
}
