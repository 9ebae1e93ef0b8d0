package consent

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Lookalike is what in one text can pass for something else, said for the person: the flags
// in words, and the words they concern with every character outside ASCII written as \uXXXX,
// so that the person sees which letters are not what they seem.
type Lookalike struct {
	// Field names the text: "reason", "client_name", "params.url", "grants[0]", ...; empty
	// from Lookalikes, which sees only the text.
	Field string   `json:"field,omitempty"`
	Flags []string `json:"flags"`
	Shown []string `json:"shown,omitempty"`
}

// The flags Lookalikes raises, each a sentence for the person.
const (
	FlagBidi      = "characters that change the direction of the text around them"
	FlagInvisible = "invisible characters"
	FlagForms     = "characters that pass for plain letters, digits or punctuation (fullwidth, mathematical or other look-alike forms)"
	// flagMixed and flagWhole are followed by the scripts' names.
	flagMixed = "letters from more than one script in one word: "
	flagWhole = "a word written in letters that look like Latin ones but are "
)

// Lookalikes says what in s can pass for something else: characters that change the
// direction of the text or show as nothing (bidirectional controls, zero-width characters,
// fillers, tags), letters of more than one script in one word ("pаypal" with a Cyrillic а;
// Japanese and Korean mixes are one script here), a word of another script whose letters all
// look like Latin ones in a text that also holds Latin ("раураl" in an English sentence),
// and fullwidth, mathematical and other forms of plain letters, digits and punctuation
// ("ｐaypal", "𝐩aypal", "example∕login"). A text in one script, whatever it is, raises none.
//
// It is capgate's one look-alike check: the approval page and `capgate approvals` run it on
// every text an agent, an app or a tool server supplied (client name, summary, reason, audit
// tag, grants, constraints, every string in the params) and on every host in an address.
// The zero Lookalike (no Flags) means nothing was found.
func Lookalikes(s string) Lookalike {
	var l Lookalike
	if isASCII(s) {
		return l
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	flag := func(f, word string) {
		if !slices.Contains(l.Flags, f) {
			l.Flags = append(l.Flags, f)
		}
		if w := escapeNonASCII(clip(word, maxShownWordBytes)); len(l.Shown) < maxShownWords && !slices.Contains(l.Shown, w) {
			l.Shown = append(l.Shown, w)
		}
	}
	hasLatin := strings.ContainsFunc(s, func(c rune) bool { return unicode.IsLetter(c) && unicode.Is(unicode.Latin, c) })
	for _, w := range words(s) {
		for _, c := range w {
			switch {
			case bidi(c):
				flag(FlagBidi, w)
			case Invisible(c):
				flag(FlagInvisible, w)
			case passesForASCII(c):
				flag(FlagForms, w)
			}
		}
		sc := wordScripts(w)
		switch {
		case len(sc) > 1:
			flag(flagMixed+strings.Join(sc, ", "), w)
		case len(sc) == 1 && sc[0] != "Latin" && hasLatin && allLatinLike(w):
			flag(flagWhole+sc[0], w)
		}
	}
	return l
}

// OK reports whether l found nothing.
func (l Lookalike) OK() bool { return len(l.Flags) == 0 }

// Limits of what a Lookalike shows: a few words, each cut short, enough to point at the
// letters without repeating a long text.
const (
	maxShownWords     = 5
	maxShownWordBytes = 80
)

// words splits s at white space and ASCII punctuation: what is left are the words a look-alike
// hides in, with their invisible and non-ASCII punctuation characters kept inside them
// ("pay\u200bpal", "example∕login"), so that "аpple.com" is the words "аpple" and "com".
func words(s string) []string {
	return strings.FieldsFunc(s, func(c rune) bool {
		return unicode.IsSpace(c) && !Invisible(c) || c < utf8.RuneSelf && !unicode.IsLetter(c) && !unicode.IsDigit(c)
	})
}

// bidi reports whether c is a bidirectional formatting character: marks, embeddings,
// overrides and isolates, which reorder the text around them.
func bidi(c rune) bool {
	return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
}

// Invisible reports whether c shows as nothing or changes how the text around it is shown,
// beyond the controls: bidirectional formatting, zero-width characters and joiners, the
// soft hyphen, the byte-order mark, line and paragraph separators, invisible operators,
// interlinear annotations, Hangul and braille fillers, Mongolian and Khmer invisible signs,
// musical formatting and tag characters. The approval page writes each as \uXXXX.
func Invisible(c rune) bool {
	switch {
	case bidi(c):
		return true
	case c == 0xad || c == 0x034f || c == 0x115f || c == 0x1160 || c == 0x17b4 || c == 0x17b5 || (c >= 0x180b && c <= 0x180f):
		return true
	case (c >= 0x200b && c <= 0x200f) || c == 0x2028 || c == 0x2029 || (c >= 0x2060 && c <= 0x206f):
		return true
	case c == 0x2800 || c == 0x3164 || c == 0xfeff || c == 0xffa0 || (c >= 0xfff9 && c <= 0xfffb):
		return true
	case (c >= 0x1d173 && c <= 0x1d17a) || (c >= 0xe0000 && c <= 0xe007f):
		return true
	}
	return false
}

// passesForASCII reports whether c, not ASCII, is a form of a plain letter, digit or the
// punctuation of addresses and paths: its compatibility form (NFKC) is that one ASCII
// character (fullwidth "ｐ", mathematical "𝐩", circled "ⓐ", "ℓ"), or it is one of the
// look-alikes NFKC leaves alone (division and fraction slashes, Armenian and ratio colons,
// the ideographic full stop, IPA "ɑ" and "ɡ", the dental click "ǀ"). Superscript and
// subscript digits and the ordinal indicators (m², 1º) are ordinary text, not look-alikes.
func passesForASCII(c rune) bool {
	if c < utf8.RuneSelf || c == 0xaa || c == 0xba || c == 0xb2 || c == 0xb3 || c == 0xb9 || (c >= 0x2070 && c <= 0x209f) {
		return false
	}
	if strings.ContainsRune(lookalikePunct, c) {
		return true
	}
	f := norm.NFKC.String(string(c))
	if len(f) != 1 {
		return false
	}
	b := f[0]
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte(`/\.:@-_~?#=&%`, b) >= 0
}

// lookalikePunct are characters that pass for ASCII ones and that NFKC does not map to them.
const lookalikePunct = "\u2215\u2044\u29f8\u2571\u27cb\u3002\u2027\u0589\u2236\ua789\u02d0\u05c3\u0251\u0261\u01c0"

// latinLike are the letters of other scripts that look like Latin ones in most fonts.
const latinLike = "" +
	"\u0430\u0441\u0435\u043e\u0440\u0445\u0443\u0455\u0456\u0458\u04cf\u04bb\u0501\u051b\u051d\u04af" + // Cyrillic а с е о р х у ѕ і ј ӏ һ ԁ ԛ ԝ ү
	"\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0405\u0406\u0408\u04ae\u051a\u051c" + // А В Е К М Н О Р С Т Х Ѕ І Ј Ү Ԛ Ԝ
	"\u03bf\u03b1\u03bd\u03b9\u03c1\u03c5" + // Greek ο α ν ι ρ υ
	"\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7" + // Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ
	"\u0585\u057d\u0581\u0570\u0578\u0566" + // Armenian օ ս ց հ ո զ
	"\u13aa\u13f4\u13df\u13ac\u13c0\u13bb\u13ab\u13e6\u13de\u13b7\u13e2\u13da\u13a2\u13b3\u13c3\u13d9" // Cherokee Ꭺ Ᏼ Ꮯ Ꭼ Ꮐ Ꮋ Ꭻ Ꮶ Ꮮ Ꮇ Ꮲ Ꮪ Ꭲ Ꮃ Ꮓ Ꮩ

// allLatinLike reports whether w has at least two letters and every letter of it is in
// latinLike: a word that reads as a Latin one though none of its letters is.
func allLatinLike(w string) bool {
	n := 0
	for _, c := range w {
		if !unicode.IsLetter(c) {
			continue
		}
		if !strings.ContainsRune(latinLike, c) {
			return false
		}
		n++
	}
	return n >= 2
}

// scriptNames are Unicode's scripts but Common and Inherited, sorted by name, so that a
// letter's script is found in the same order every time.
var scriptNames = func() []string {
	var out []string
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}()

// scriptOf is the script of the letter c, "" for Common and Inherited ones.
func scriptOf(c rune) string {
	if c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			return "Latin"
		}
		return ""
	}
	for _, name := range scriptNames {
		if unicode.Is(unicode.Scripts[name], c) {
			return name
		}
	}
	return ""
}

// wordScripts returns the scripts of the letters of w, Latin first and then by name, with
// the scripts that are written together (Han with Hiragana and Katakana, Han with Hangul,
// Han with Bopomofo) counted as one.
func wordScripts(w string) []string {
	var sc []string
	for _, c := range w {
		if !unicode.IsLetter(c) {
			continue
		}
		if s := scriptOf(c); s != "" && !slices.Contains(sc, s) {
			sc = append(sc, s)
		}
	}
	for _, together := range [][]string{{"Han", "Hiragana", "Katakana"}, {"Han", "Hangul"}, {"Han", "Bopomofo"}} {
		if len(sc) > 1 && !slices.ContainsFunc(sc, func(s string) bool { return !slices.Contains(together, s) }) {
			return sc[:1]
		}
	}
	slices.SortFunc(sc, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "Latin":
			return -1
		case b == "Latin":
			return 1
		}
		return strings.Compare(a, b)
	})
	return sc
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// escapeNonASCII writes every character of s outside printable ASCII as \uXXXX (\UXXXXXXXX
// above the first plane).
func escapeNonASCII(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 0x20 && c < 0x7f:
			b.WriteRune(c)
		case c > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
