package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

// requestView is one consent request as the page shows it, and as /ui/requests.json sends
// it to the page's script. Every string in it came from an agent, an app or a tool server
// unless said otherwise, and is rendered as text, never markup; reveal has made its control
// and bidirectional characters visible.
type requestView struct {
	ID       string `json:"id"`    // capgate's
	Kind     string `json:"kind"`  // token, call, commit, pin
	What     string `json:"what"`  // capgate's words for the kind
	State    string `json:"state"` // pending, approved, denied, expired, cancelled
	Pending  bool   `json:"pending"`
	Client   string `json:"client"` // the client's name, else its id
	Summary  string `json:"summary"`
	CapID    string `json:"capability_id,omitempty"`
	Perm     string `json:"permission,omitempty"`
	Grants   string `json:"grants,omitempty"` // comma-separated
	Params   string `json:"params,omitempty"` // indented JSON text
	Risk     string `json:"risk"`
	HighRisk bool   `json:"high_risk"`
	Effects  string `json:"side_effects,omitempty"`
	// Undo is capgate's words for the reversibility: "Undo", the remedy's name, or
	// "cannot be undone" (consent.Request.ReversibilityText).
	Undo         string    `json:"undo"`
	Irreversible bool      `json:"irreversible"`
	Reason       string    `json:"reason,omitempty"`
	AuditTag     string    `json:"audit_tag,omitempty"`
	Wording      string    `json:"wording,omitempty"`
	CanRemember  bool      `json:"can_remember"`
	Commit       bool      `json:"commit"`         // a delayed commit: countdown and cancel only
	Expires      int64     `json:"expires_ms"`     // Unix milliseconds
	WindowEnds   int64     `json:"window_ms"`      // a commit's window end, Unix milliseconds
	Answered     string    `json:"answered"`       // RFC 3339, "" while pending
	AnsweredBy   string    `json:"answered_by"`    //
	URLs         []urlView `json:"urls,omitempty"` // addresses found in the params
	Left         string    `json:"-"`              // time left at rendering; the script keeps it current
}

// kindWords says what a request of each kind is, in capgate's words.
var kindWords = map[string]string{
	consent.KindToken:  "asks for a capability token",
	consent.KindCall:   "asks to make one call",
	consent.KindCommit: "is about to make a call that cannot be undone",
	"pin":              "changed a tool: accept its new definition?",
}

// newView builds the view of a stored request and its decoded payload at now.
func newView(c store.Consent, r consent.Request, now time.Time) requestView {
	v := requestView{
		ID: c.ID, Kind: c.Kind, State: c.State, Client: reveal(r.ClientName, false),
		Summary: reveal(r.Summary, true), CapID: reveal(r.CapabilityID, false), Perm: reveal(r.Permission, false),
		Risk: reveal(r.Risk, false), Effects: reveal(r.SideEffects, false), Undo: reveal(r.ReversibilityText(), false),
		Reason: reveal(r.Reason, true), AuditTag: reveal(r.AuditTag, false), Wording: reveal(r.Wording, true),
		Expires: c.Expires.UnixMilli(), AnsweredBy: reveal(c.AnsweredBy, false),
	}
	v.What = kindWords[c.Kind]
	if v.What == "" {
		v.What = "asks"
	}
	if v.Client == "" {
		v.Client = reveal(r.ClientID, false)
	}
	if v.Risk == "" {
		v.Risk = "not stated"
	}
	grants := make([]string, len(r.Grants))
	for i, g := range r.Grants {
		grants[i] = reveal(g, false)
	}
	v.Grants = strings.Join(grants, ", ")
	v.HighRisk = r.Risk == "high" || r.SideEffects == "destructive" || r.SideEffects == "system"
	v.Irreversible = r.Reversibility != consent.Reversible && v.Undo == "cannot be undone"
	v.Pending = c.State == store.ConsentPending && now.Before(c.Expires)
	if c.State == store.ConsentPending && !v.Pending {
		v.State = store.ConsentExpired
	}
	v.Commit = c.Kind == consent.KindCommit
	if v.Commit {
		v.WindowEnds = c.Expires.Add(-CommitGrace).UnixMilli()
		v.Left = timeLeft(c.Expires.Add(-CommitGrace), now)
	} else {
		v.Left = timeLeft(c.Expires, now)
	}
	v.CanRemember = !v.Commit && r.Wording != "" && r.Permission != ""
	if !c.Answered.IsZero() {
		v.Answered = c.Answered.UTC().Format(time.RFC3339)
	}
	v.Params, v.URLs = showParams(r.Params)
	return v
}

// timeLeft is the time left until t, seen at now: "4 min 10 s"; the page's script keeps it
// current.
func timeLeft(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "none"
	}
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d.Seconds()))
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// showParams returns params as indented JSON text with hidden characters revealed, and the
// URLs found in its strings. Params that are not JSON (they always are: the broker passes
// canonical JSON) are shown as revealed text.
func showParams(raw json.RawMessage) (string, []urlView) {
	if len(raw) == 0 {
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return reveal(string(raw), true), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // html/template escapes when rendering; the JSON shows the text as sent
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return reveal(string(raw), true), nil
	}
	var urls []urlView
	walkStrings(v, func(s string) {
		for _, u := range findURLs(s) {
			if len(urls) < maxURLs && !slices.ContainsFunc(urls, func(x urlView) bool { return x.Full == u.Full }) {
				urls = append(urls, u)
			}
		}
	})
	// Hidden characters can only be inside JSON strings, where "\uXXXX" is their own escape:
	// the text stays valid JSON meaning the same.
	return reveal(strings.TrimRight(b.String(), "\n"), true), urls
}

// maxURLs is the most URLs listed from one request's params.
const maxURLs = 20

// walkStrings calls f with every string (keys too) in a decoded JSON value.
func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	}
}

// hidden reports whether c would be invisible, or would change how the text around it is
// shown: controls, bidirectional formatting, zero-width characters, line and paragraph
// separators, the byte-order mark and soft hyphen.
func hidden(c rune, multiline bool) bool {
	switch {
	case c == '\n' || c == '\t':
		return !multiline
	case c < 0x20 || (c >= 0x7f && c < 0xa0):
		return true
	case c == 0xad || c == 0x061c || c == 0x180e || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
		(c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb):
		return true
	case c == utf8.RuneError:
		return true
	}
	return false
}

// reveal returns s with every hidden character written as a visible \uXXXX escape, so that
// what an agent wrote cannot hide text or reorder what the person reads.
func reveal(s string, multiline bool) string {
	if !strings.ContainsFunc(s, func(c rune) bool { return hidden(c, multiline) }) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if hidden(c, multiline) {
			fmt.Fprintf(&b, `\u%04x`, c)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// urlView is a URL found in params, split so that its host can be highlighted. It is never
// a link, and the page never fetches it.
type urlView struct {
	Full   string   `json:"full"`   // as found, revealed
	Before string   `json:"before"` // scheme and user info
	Host   string   `json:"host"`   // the host the URL really goes to
	After  string   `json:"after"`  // port, path, query, fragment
	Flags  []string `json:"flags,omitempty"`
	// Lookalike is set when the host holds characters that can pass for others: not ASCII,
	// punycode (xn--) labels, or letters of more than one script.
	Lookalike bool `json:"lookalike"`
	// Escaped is the host with every non-ASCII character as \uXXXX, when it has any.
	Escaped string `json:"escaped,omitempty"`
}

// urlPattern finds absolute URLs ("scheme://...") and script URLs in text.
var urlPattern = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>]+|\b(?:javascript|vbscript|data):[^\s"'<>]*`)

// findURLs returns the URLs in s.
func findURLs(s string) []urlView {
	var out []urlView
	for _, m := range urlPattern.FindAllString(s, maxURLs) {
		out = append(out, splitURL(m))
	}
	return out
}

// splitURL splits the URL text m for display and flags what a person could misread. It
// splits by hand rather than with net/url, which refuses some of the very addresses a person
// must be warned about (non-ASCII user info, for one).
func splitURL(m string) urlView {
	v := urlView{Full: reveal(m, false)}
	scheme, rest, ok := strings.Cut(m, "://")
	if !ok {
		v.Before = v.Full
		v.Flags = append(v.Flags, "a script or data address, not a web site")
		return v
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	before := scheme + "://"
	hostPort := authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		before += authority[:at+1]
		hostPort = authority[at+1:]
	}
	host, port := hostPort, ""
	if strings.HasPrefix(hostPort, "[") {
		if i := strings.Index(hostPort, "]"); i >= 0 {
			host, port = hostPort[:i+1], hostPort[i+1:]
		}
	} else if i := strings.LastIndex(hostPort, ":"); i >= 0 {
		host, port = hostPort[:i], hostPort[i:]
	}
	v.Before, v.Host, v.After = reveal(before, false), reveal(host, false), reveal(port+rest[len(authority):], false)
	if host == "" {
		v.Flags = append(v.Flags, "no host")
		return v
	}
	if sc := strings.ToLower(scheme); sc != "http" && sc != "https" {
		v.Flags = append(v.Flags, "not a web address: "+reveal(sc, false))
	}
	if strings.Contains(authority, "@") {
		v.Flags = append(v.Flags, "the text before @ is not where this goes: it goes to "+v.Host)
	}
	if _, err := url.Parse(m); err != nil {
		v.Flags = append(v.Flags, "not a well-formed address")
	}
	v.Flags = append(v.Flags, hostFlags(host)...)
	v.Lookalike = lookalike(host)
	if !isASCII(host) {
		var b strings.Builder
		for _, c := range host {
			if c < utf8.RuneSelf {
				b.WriteRune(c)
			} else {
				fmt.Fprintf(&b, `\u%04x`, c)
			}
		}
		v.Escaped = b.String()
	}
	return v
}

// lookalike reports whether a host holds characters that can pass for others.
func lookalike(host string) bool {
	return !isASCII(host) || hasPunycode(host) || len(scripts(host)) > 1
}

// hostFlags says what is unusual about a host, in words for the person, beside the
// "look-alike characters" flag itself (urlView.Lookalike).
func hostFlags(host string) []string {
	var f []string
	if !isASCII(host) {
		f = append(f, "characters that are not plain ASCII")
	}
	if hasPunycode(host) {
		f = append(f, "punycode (xn--): the name is shown encoded and may spell something else")
	}
	if s := scripts(host); len(s) > 1 {
		f = append(f, "letters from more than one script: "+strings.Join(s, ", "))
	}
	return f
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func hasPunycode(host string) bool {
	for _, l := range strings.Split(strings.ToLower(host), ".") {
		if strings.HasPrefix(l, "xn--") {
			return true
		}
	}
	return false
}

// scriptTables are the scripts whose letters most often pass for one another in host names.
var scriptTables = []struct {
	name string
	t    *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Han", unicode.Han},
	{"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew},
}

// scripts returns the scripts of the letters in s, in scriptTables' order; a letter of
// none of them counts as "other".
func scripts(s string) []string {
	seen := map[string]bool{}
	for _, c := range s {
		if !unicode.IsLetter(c) {
			continue
		}
		name := "other"
		for _, st := range scriptTables {
			if unicode.Is(st.t, c) {
				name = st.name
				break
			}
		}
		seen[name] = true
	}
	var out []string
	for _, st := range scriptTables {
		if seen[st.name] {
			out = append(out, st.name)
		}
	}
	if seen["other"] {
		out = append(out, "other")
	}
	return out
}
