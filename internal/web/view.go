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
	"unicode/utf8"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// requestView is one consent request as the page shows it, and as /ui/requests.json sends
// it to the page's script. Every string in it came from an agent, an app or a tool server
// unless said otherwise, and is rendered as text, never markup; reveal has made its control
// and bidirectional characters visible. What the request means in words (uses, lifetime,
// constraints, undo) is consent.Describe's, as `capgate approvals` says it.
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
	// Token is set for a token request: Uses, Lifetime and Constraints say what it would
	// issue, and Revocable that it can be revoked.
	Token       bool     `json:"token"`
	Uses        string   `json:"uses,omitempty"`        // "at most 1000 uses"
	Lifetime    string   `json:"lifetime,omitempty"`    // "29 days 4 h, until Dec 30, 2026 14:00 UTC"
	Constraints []string `json:"constraints,omitempty"` // in words, "none" for none
	Revocable   bool     `json:"revocable"`
	// Trigger is a trigger request in words (consent.TriggerWords): when it fires, its
	// condition, action, budget, end date, missed firings and mandate, one line each.
	Trigger []string `json:"trigger,omitempty"`
	// Undo is capgate's words for whether and how it can be taken back (consent.Details.Undo);
	// Irreversible is set when they say it cannot be.
	Undo         string         `json:"undo"`
	Irreversible bool           `json:"irreversible"`
	Reason       string         `json:"reason,omitempty"`
	AuditTag     string         `json:"audit_tag,omitempty"`
	Wording      string         `json:"wording,omitempty"`
	Difference   []diffLine     `json:"difference,omitempty"` // a tool's change, a pin request's
	Lookalikes   []lookalikeRow `json:"lookalikes,omitempty"` // agent-supplied texts with look-alike characters
	CanRemember  bool           `json:"can_remember"`
	Commit       bool           `json:"commit"`         // a delayed commit: countdown and cancel only
	Expires      int64          `json:"expires_ms"`     // Unix milliseconds
	WindowEnds   int64          `json:"window_ms"`      // a commit's window end, Unix milliseconds
	Answered     string         `json:"answered"`       // RFC 3339, "" while pending
	AnsweredBy   string         `json:"answered_by"`    //
	URLs         []urlView      `json:"urls,omitempty"` // addresses found in the params
	// Form is a tool server's form (toolserver.KindForm), to fill in on the request's own
	// page; FormMessage is the server's message with it. Both are the server's words.
	Form        []formFieldView `json:"form,omitempty"`
	FormMessage string          `json:"form_message,omitempty"`
	Left        string          `json:"-"` // time left at rendering; the script keeps it current
}

// lookalikeRow is one agent-supplied text that holds look-alike characters: where it is, in
// capgate's words, what was found, and the words concerned with their non-ASCII characters
// escaped (consent.Lookalike).
type lookalikeRow struct {
	Field string   `json:"field"`
	Flags []string `json:"flags"`
	Shown []string `json:"shown,omitempty"`
}

// fieldWords names the fields of a request for the person, as the card labels them.
var fieldWords = map[string]string{
	"client_name": "Client name", "summary": "Summary", "capability_id": "Capability", "permission": "Permission",
	"remedy": "Remedy", "reason": "Reason given", "audit_tag": "Audit tag", "wording": "Wording to remember",
}

// kindWords says what a request of each kind is, in capgate's words.
var kindWords = map[string]string{
	consent.KindToken:   "asks for a capability token",
	consent.KindCall:    "asks to make one call",
	consent.KindCommit:  "is about to make a call that cannot be undone",
	consent.KindTrigger: "proposes a trigger: when something happens, it acts for you",
	"pin":               "found a new or changed tool: accept its definition?",
	desktop.KindReview:  "found a change in a desktop app's window: accept what it offers now?",
	toolserver.KindURL:  "asks you to open a page (shown, not opened)",
	toolserver.KindForm: "asks you to fill in a form (only what you enter is sent)",
}

// newView builds the view of a stored request and its decoded payload at now.
func newView(c store.Consent, r consent.Request, now time.Time) requestView {
	d := consent.Describe(r)
	v := requestView{
		ID: c.ID, Kind: c.Kind, State: c.State, Client: reveal(r.ClientName, false),
		Summary: reveal(r.Summary, true), CapID: reveal(r.CapabilityID, false), Perm: reveal(r.Permission, false),
		Risk: reveal(r.Risk, false), Effects: reveal(r.SideEffects, false), Undo: reveal(d.Undo, false), Irreversible: d.Irreversible,
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
	if c.Kind == consent.KindToken {
		v.Token, v.Revocable, v.Uses, v.Lifetime = true, d.Revocable, reveal(d.Uses, false), reveal(d.Lifetime, false)
		if d.ExpiresAt != nil {
			v.Lifetime += ", until " + consent.ShowDate(*d.ExpiresAt)
		}
		for _, w := range d.Constraints {
			v.Constraints = append(v.Constraints, reveal(w, false))
		}
	}
	if c.Kind == consent.KindTrigger {
		v.Revocable = d.Revocable
		for _, w := range d.Trigger {
			v.Trigger = append(v.Trigger, reveal(w, false))
		}
	}
	v.HighRisk = r.Risk == "high" || r.SideEffects == "destructive" || r.SideEffects == "system"
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
	if c.Kind == toolserver.KindForm {
		v.Params = "" // shown as the form below
		if fr, err := toolserver.FormRequestOf(r.Params); err == nil {
			v.FormMessage = reveal(fr.Message, true)
			for _, f := range fr.Fields {
				v.Form = append(v.Form, formFieldOf(f))
			}
		}
	}
	v.Difference = diffLines(pinDifference(r))
	for _, l := range d.Lookalikes {
		row := lookalikeRow{Field: fieldWords[l.Field], Flags: l.Flags, Shown: l.Shown}
		if row.Field == "" {
			row.Field = reveal(l.Field, false) // params.x, grants[0], token.allowed_paths[1], difference[2]
		}
		v.Lookalikes = append(v.Lookalikes, row)
	}
	return v
}

// pinDifference is a pin request's difference. Requests recorded before the difference had
// its own place carried it as their reason.
func pinDifference(r consent.Request) []string {
	if len(r.Difference) > 0 || r.Kind != "pin" {
		return r.Difference
	}
	return strings.Split(r.Reason, "\n")
}

// timeLeft is the time left until t, seen at now, as consent.ShowDuration says it ("4 min
// 10 s", "23 h 59 min"), "none" when it is past; the page's script keeps it current with the
// same words.
func timeLeft(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "none"
	}
	return consent.ShowDuration(d)
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
// shown: controls (line feeds and tabs but in multiline text), the replacement character of
// bad UTF-8, and what consent.Invisible names (bidirectional formatting, zero-width
// characters, separators, the byte-order mark, soft hyphen, fillers, tags).
func hidden(c rune, multiline bool) bool {
	switch {
	case c == '\n' || c == '\t':
		return !multiline
	case c < 0x20 || (c >= 0x7f && c < 0xa0):
		return true
	case c == utf8.RuneError:
		return true
	}
	return consent.Invisible(c)
}

// reveal returns s with every hidden character written as a visible \uXXXX escape
// (\UXXXXXXXX beyond the first plane), so that what an agent wrote cannot hide text or
// reorder what the person reads.
func reveal(s string, multiline bool) string {
	if !strings.ContainsFunc(s, func(c rune) bool { return hidden(c, multiline) }) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		switch {
		case !hidden(c, multiline):
			b.WriteRune(c)
		case c > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
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
	// punycode (xn--) labels, or what consent.Lookalikes finds.
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
	hf := hostFlags(host)
	v.Flags, v.Lookalike = append(v.Flags, hf...), len(hf) > 0
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

// hostFlags says what in a host can pass for something else, in words for the person: a
// host name is plain ASCII, so any other character is flagged; a punycode label may spell
// something else; and whatever consent.Lookalikes, capgate's one look-alike check, finds.
func hostFlags(host string) []string {
	var f []string
	if !isASCII(host) {
		f = append(f, "characters that are not plain ASCII")
	}
	if hasPunycode(host) {
		f = append(f, "punycode (xn--): the name is shown encoded and may spell something else")
	}
	return append(f, consent.Lookalikes(host).Flags...)
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

// formFieldView is one field of a tool server's form as the page shows it: its name, title and
// description revealed (the server's words), its choices, and what capgate filled in from the
// person's profile (FromProfile names the profile field).
type formFieldView struct {
	Name        string   `json:"name"`
	Label       string   `json:"label"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"`
	Enum        []string `json:"enum,omitempty"`
	Required    bool     `json:"required"`
	Value       string   `json:"value,omitempty"`
	Checked     bool     `json:"checked,omitempty"`
	FromProfile string   `json:"from_profile,omitempty"`
}

func formFieldOf(f toolserver.FormField) formFieldView {
	v := formFieldView{Name: f.Name, Label: reveal(f.Title, false), Description: reveal(f.Description, true), Type: f.Type,
		Required: f.Required, FromProfile: f.Profile}
	if v.Label == "" {
		v.Label = reveal(f.Name, false)
	}
	v.Enum = append(v.Enum, f.Enum...)
	switch x := f.Value.(type) {
	case string:
		v.Value = x
	case bool:
		v.Checked = x
	}
	return v
}
