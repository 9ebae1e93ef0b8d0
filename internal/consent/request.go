package consent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kinds of request, store.Consent.Kind.
const (
	KindToken  = "token"  // issuing a token that needs the person's consent
	KindCall   = "call"   // one call
	KindCommit = "commit" // the delayed-commit window of an allowed irreversible call
	// KindTrigger is a trigger an agent proposes: "when X happens, do Y", with its budget
	// and end date (Request.Trigger). Approving it lets the trigger fire, each firing
	// decided afresh.
	KindTrigger = "trigger"
)

// Reversibility values: a call's as its capability declares them, and a token request's.
// Details says each in words.
const (
	Reversible   = "reversible"   // undone without side effects, within the undo window if one is given
	Compensable  = "compensable"  // made good with time and cost, by the remedy
	Irreversible = "irreversible" // cannot be undone
	// Revocable is a token request's and a trigger's: the token it issues, or the trigger,
	// can be revoked at any time, though what its calls did stays done. It is the only
	// value of those two kinds.
	Revocable = "revocable"
)

// Autonomy is the mandate autonomy Approve with remember records.
const AutonomyActIfAgreed = "act_if_agreed"

// Request is what the person sees when asked: who asks, the capability in plain words, its
// params shown safely, the risk, side effects and reversibility, the reason and audit tag.
// It is kept as JSON in store.Consent.Payload; the expiry is the record's Expires.
//
// Params are passed already redacted and canonical by the broker; a Request has no field
// for a client key or a token, and none may be added: the payload is shown and listed.
//
// Text fields are valid UTF-8 without control characters (Summary, Reason and Wording may
// hold line breaks) and without bidirectional overrides, so that what the agent writes
// cannot repaint the terminal or reorder what the person reads.
//
// Evolution: fields may be added, with omitempty, never renamed or given a new meaning.
type Request struct {
	ClientID     string          `json:"client_id"`
	ClientName   string          `json:"client_name,omitempty"`
	Kind         string          `json:"kind"` // KindToken, KindCall, KindCommit or KindTrigger
	CapabilityID string          `json:"capability_id,omitempty"`
	Permission   string          `json:"permission,omitempty"`
	Summary      string          `json:"summary,omitempty"` // the capability in plain words
	Params       json.RawMessage `json:"params,omitempty"`  // redacted, canonical JSON
	Risk         string          `json:"risk,omitempty"`
	SideEffects  string          `json:"side_effects,omitempty"`
	// Reversibility is Reversible, Compensable or Irreversible for a call; empty is
	// recorded as Irreversible (an undeclared value is treated as irreversible). A token
	// request's is Revocable, and empty is recorded as Revocable.
	Reversibility string `json:"reversibility"`
	// UndoWindowMS is how long after it runs a reversible call can be undone, in
	// milliseconds; 0 when the capability gives no window.
	UndoWindowMS int64  `json:"undo_window_ms,omitempty"`
	Remedy       string `json:"remedy,omitempty"` // Compensable: the remedy's name, e.g. "Request refund"
	Reason       string `json:"reason,omitempty"` // the agent's reason
	AuditTag     string `json:"audit_tag,omitempty"`
	// Grants are the permissions a token request asks for.
	Grants []string `json:"grants,omitempty"`
	// Token is what a token request would issue beyond its grants: when it expires, how
	// many uses it has and its constraints, as the person approves them. Nil on other kinds,
	// and on token requests recorded before capgate showed them.
	Token *TokenTerms `json:"token,omitempty"`
	// Trigger is what a trigger request would let fire: its event, condition, action with
	// its fixed target, budget and end date. Nil on other kinds.
	Trigger *TriggerTerms `json:"trigger,omitempty"`
	// Difference is what changed in a tool server's tool, one line per value ("- /path:
	// old", "+ /path: new"), shown as it is: a pin request's, never a reason.
	Difference []string `json:"difference,omitempty"`
	// Wording is the exact text the person agrees to. Only a request with a Wording can be
	// approved with remember (act_if_agreed).
	Wording string `json:"wording,omitempty"`
}

// TokenTerms are the bounds of the token a token request would issue, the members of the
// token's own constraints under the same names. The token's expiry is fixed when the agent
// asks, so the lifetime left shrinks while the request waits.
type TokenTerms struct {
	ExpiresAt time.Time `json:"expires_at"`
	// Lifetime is how long the token lives from the request on, in seconds.
	Lifetime        int64    `json:"lifetime_s"`
	MaxUses         int64    `json:"max_uses,omitempty"` // 0: no limit
	AllowedPaths    []string `json:"allowed_paths,omitempty"`
	AllowedCommands []string `json:"allowed_commands,omitempty"`
	DeniedCommands  []string `json:"denied_commands,omitempty"`
	DeniedPatterns  []string `json:"denied_patterns,omitempty"`
	Condition       string   `json:"condition,omitempty"` // CEL, shown as text
}

// TriggerTerms are a proposed trigger as the person approves it. The action's params are
// its fixed target: no event can change them.
type TriggerTerms struct {
	ID string `json:"id"` // the trigger's id
	// Event says the event source in words ("at 09:00 every day (Europe/Istanbul)", "a
	// signed request to its webhook", "the event files.changed of app ...").
	Event     string `json:"event"`
	Condition string `json:"condition,omitempty"` // CEL over the event, shown as text
	// Capability is the one action the trigger may take; CapabilityID and Params of the
	// Request are the same action and its fixed params.
	Capability string    `json:"capability"`
	MaxFirings int64     `json:"max_firings"`      // the count budget: it stops after this many
	Budget     string    `json:"budget,omitempty"` // the budget in words, the sum's too
	EndsAt     time.Time `json:"ends_at"`          // it stops for good then
	// Missed is what becomes of firings missed while capgate was down: "skip" or "once".
	Missed string `json:"missed"`
	// Mandate is the permission of the person's mandate the trigger is bound to.
	Mandate string `json:"mandate"`
}

// termList is one of a token's constraint lists: its field path, how the person reads it,
// and its entries.
type termList struct {
	field, words string
	list         []string
}

// lists returns t's constraint lists, in the order they are checked and shown.
func (t TokenTerms) lists() [4]termList {
	return [...]termList{
		{"token.allowed_paths", "only these paths: ", t.AllowedPaths},
		{"token.allowed_commands", "only these commands: ", t.AllowedCommands},
		{"token.denied_commands", "never these commands: ", t.DeniedCommands},
		{"token.denied_patterns", "never commands matching: ", t.DeniedPatterns},
	}
}

// normalize returns r with an empty Reversibility recorded as Irreversible (Revocable for a
// token request).
func (r Request) normalize() Request {
	if r.Reversibility == "" {
		r.Reversibility = Irreversible
		if r.Kind == KindToken || r.Kind == KindTrigger {
			r.Reversibility = Revocable
		}
	}
	if len(r.Params) == 0 {
		r.Params = nil
	}
	return r
}

// validate checks r for kind (the kind the caller is creating) and returns every problem,
// each naming its field.
func (r Request) validate(kind string) error {
	var errs []error
	add := func(field, rule string) {
		errs = append(errs, fmt.Errorf("%w: %s %s", ErrInvalidRequest, field, rule))
	}
	if r.Kind != kind {
		add("kind", fmt.Sprintf("must be %q here", kind))
	}
	if r.ClientID == "" {
		add("client_id", "is required")
	}
	switch kind {
	case KindToken:
		if len(r.Grants) == 0 {
			add("grants", "are required for a token request")
		}
	case KindCall, KindCommit:
		if r.Permission == "" {
			add("permission", "is required for a "+kind+" request")
		}
	case KindTrigger:
		if r.Trigger == nil {
			add("trigger", "is required for a trigger request")
		}
		if r.Permission == "" {
			add("permission", "is required for a trigger request")
		}
	}
	if len(r.Grants) > MaxGrants {
		add("grants", "must be at most MaxGrants")
	}
	for i, g := range r.Grants {
		if g == "" || !validText(g, MaxFieldBytes, false) {
			add(fmt.Sprintf("grants[%d]", i), "must be 1 to MaxFieldBytes bytes of printable text")
		}
	}
	for _, f := range []struct{ name, v string }{
		{"client_id", r.ClientID}, {"client_name", r.ClientName}, {"capability_id", r.CapabilityID},
		{"permission", r.Permission}, {"risk", r.Risk}, {"side_effects", r.SideEffects},
		{"reversibility", r.Reversibility}, {"remedy", r.Remedy}, {"audit_tag", r.AuditTag},
	} {
		if !validText(f.v, MaxFieldBytes, false) {
			add(f.name, "must be at most MaxFieldBytes bytes of printable text")
		}
	}
	for _, f := range []struct{ name, v string }{
		{"summary", r.Summary}, {"reason", r.Reason}, {"wording", r.Wording},
	} {
		if !validText(f.v, MaxTextBytes, true) {
			add(f.name, "must be at most MaxTextBytes bytes of printable text")
		}
	}
	revocable := r.Kind == KindToken || r.Kind == KindTrigger
	switch {
	case revocable && r.Reversibility != "" && r.Reversibility != Revocable:
		add("reversibility", "must be revocable for a "+r.Kind+" request")
	case !revocable && r.Reversibility == Revocable:
		add("reversibility", "must be reversible, compensable or irreversible for a "+kind+" request")
	case r.Reversibility != "" && !slices.Contains([]string{Reversible, Compensable, Irreversible, Revocable}, r.Reversibility):
		add("reversibility", "must be reversible, compensable or irreversible")
	}
	if r.UndoWindowMS < 0 {
		add("undo_window_ms", "must not be negative")
	}
	if r.Token != nil {
		if r.Kind != KindToken {
			add("token", "is only for a token request")
		}
		t := r.Token
		if t.ExpiresAt.IsZero() {
			add("token.expires_at", "is required")
		}
		if t.Lifetime <= 0 {
			add("token.lifetime_s", "must be positive")
		}
		if t.MaxUses < 0 {
			add("token.max_uses", "must not be negative")
		}
		for _, l := range t.lists() {
			if len(l.list) > MaxListEntries {
				add(l.field, "must have at most MaxListEntries entries")
			}
			for i, e := range l.list {
				if e == "" || !validText(e, MaxTextBytes, false) {
					add(fmt.Sprintf("%s[%d]", l.field, i), "must be 1 to MaxTextBytes bytes of printable text")
				}
			}
		}
		if !validText(t.Condition, MaxTextBytes, false) {
			add("token.condition", "must be at most MaxTextBytes bytes of printable text")
		}
	}
	if t := r.Trigger; t != nil {
		if r.Kind != KindTrigger {
			add("trigger", "is only for a trigger request")
		}
		if t.EndsAt.IsZero() {
			add("trigger.ends_at", "is required: there are no open-ended triggers")
		}
		if t.MaxFirings <= 0 {
			add("trigger.max_firings", "must be positive")
		}
		for _, f := range []struct{ name, v string }{
			{"trigger.id", t.ID}, {"trigger.capability", t.Capability}, {"trigger.missed", t.Missed}, {"trigger.mandate", t.Mandate},
		} {
			if f.v == "" || !validText(f.v, MaxFieldBytes, false) {
				add(f.name, "must be 1 to MaxFieldBytes bytes of printable text")
			}
		}
		for _, f := range []struct{ name, v string }{
			{"trigger.event", t.Event}, {"trigger.condition", t.Condition}, {"trigger.budget", t.Budget},
		} {
			if !validText(f.v, MaxTextBytes, false) {
				add(f.name, "must be at most MaxTextBytes bytes of printable text")
			}
		}
	}
	if len(r.Difference) > MaxDifferenceLines {
		add("difference", "must have at most MaxDifferenceLines lines")
	}
	for i, l := range r.Difference {
		if !validText(l, MaxTextBytes, false) {
			add(fmt.Sprintf("difference[%d]", i), "must be at most MaxTextBytes bytes of printable text")
		}
	}
	if len(r.Params) > 0 && !json.Valid(r.Params) {
		add("params", "must be JSON")
	}
	return errors.Join(errs...)
}

// validText reports whether s is at most max bytes of valid UTF-8 without control
// characters (but line feeds and tabs when multiline) and without bidirectional formatting
// characters, which could make a terminal or a page show something other than s.
func validText(s string, max int, multiline bool) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		switch {
		case c == '\n' || c == '\t':
			if !multiline {
				return false
			}
		case c < 0x20 || (c >= 0x7f && c < 0xa0):
			return false
		case c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
			(c >= 0x2066 && c <= 0x2069):
			return false
		}
	}
	return true
}

// newID returns "req_" followed by 24 hex digits from crypto/rand.
func newID() string {
	var b [idHexLen / 2]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return "req_" + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a request id: "req_" followed by 24 lowercase
// hex digits.
func ValidID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "req_")
	if !ok || len(hexPart) != idHexLen {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkID returns ErrInvalidID, naming the operation but not the value, for a malformed id.
func checkID(op, id string) error {
	if !ValidID(id) {
		return fmt.Errorf("consent: %s: %w", op, ErrInvalidID)
	}
	return nil
}

// checkAnswer validates what a person's answer names: the request (checkID) and who answers
// (checkBy).
func checkAnswer(op, id, by string) error {
	if err := checkID(op, id); err != nil {
		return err
	}
	return checkBy(op, by)
}

// checkBy validates the answerer named by the approval surface. Names starting with
// "capgate:" are capgate's own answers (no surface, window elapsed) and cannot be given by
// hand, so that the record tells a person's answer from capgate's.
func checkBy(op, by string) error {
	if by == "" || !validText(by, MaxFieldBytes, false) {
		return fmt.Errorf("consent: %s: %w: by must be 1 to MaxFieldBytes bytes of printable text", op, ErrInvalidRequest)
	}
	if strings.HasPrefix(by, systemPrefix) {
		return fmt.Errorf("consent: %s: %w: by must not start with %q", op, ErrInvalidRequest, systemPrefix)
	}
	return nil
}
