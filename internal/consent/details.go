package consent

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Details is a request as the person reads it before answering: the Request as recorded
// and what it means in words. The approval page and `capgate approvals --json` both show
// Describe's Details, so that the two say the same.
//
// Evolution: as Request's; the members of Request stay where they are (Details embeds it),
// members are added with new names.
type Details struct {
	Request
	// Uses, ExpiresAt, Lifetime and Constraints say what a token request would issue; they
	// are empty on other kinds, and "not recorded" on a token request recorded before
	// capgate showed them.
	Uses        string     `json:"uses,omitempty"`        // "at most 1000 uses", "no limit on uses"
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`  // when the token expires, UTC
	Lifetime    string     `json:"lifetime,omitempty"`    // how long it lives, ShowDuration: "29 days 4 h"
	Constraints []string   `json:"constraints,omitempty"` // in words, one each (ConstraintWords), "none" for none
	// Trigger says a trigger request in words, one line each: when it fires, the condition,
	// what it does, its budget, until when, missed firings and the mandate it is bound to.
	// Empty on other kinds.
	Trigger []string `json:"trigger_words,omitempty"`
	// Revocable is true for a token request and a trigger: it can be revoked at any time.
	Revocable bool `json:"revocable"`
	// Undo says in words whether and how what is approved can be taken back, right for the
	// kind: a token is revocable, a read has nothing to undo, a reversible call says for how
	// long, a compensable one names its remedy, and anything else cannot be undone.
	Undo string `json:"undo"`
	// Irreversible is true when Undo says it cannot be undone: a call that changes something
	// (or whose side effects are not stated) and that no undo, remedy or revocation takes back.
	Irreversible bool `json:"irreversible"`
	// Lookalikes are the texts an agent, an app or a tool server supplied that hold
	// look-alike characters (Lookalikes), each named by its field, at most MaxLookalikes.
	Lookalikes []Lookalike `json:"lookalikes,omitempty"`
}

// The words of Details.Undo that callers may compare with.
const (
	UndoNever    = "cannot be undone"
	UndoReadOnly = "nothing to undo: it only reads"
	UndoRevoke   = "revocable: the token can be revoked at any time (the tokens page, or capgate token revoke); what its calls did stays done"
	notRecorded  = "not recorded"
	// UndoStopTrigger is a trigger's Undo.
	UndoStopTrigger = "revocable: the trigger can be stopped at any time (the triggers page, or capgate trigger delete); what its firings did stays done"
)

// Describe says r in words. It reads only r: a request's own expiry and state are the
// store's, and a time relative to now is the caller's to say (ShowWhen).
func Describe(r Request) Details {
	d := Details{Request: r}
	switch {
	case r.Kind == KindTrigger:
		d.Revocable, d.Undo = true, UndoStopTrigger
		if t := r.Trigger; t != nil {
			at := t.EndsAt.UTC()
			d.ExpiresAt, d.Uses = &at, FiringsWords(t.MaxFirings)
			d.Trigger = TriggerWords(*t)
		}
	case r.Kind == KindToken:
		d.Revocable, d.Undo = true, UndoRevoke
		if t := r.Token; t != nil {
			at := t.ExpiresAt.UTC()
			d.Uses, d.ExpiresAt, d.Lifetime = UsesWords(t.MaxUses), &at, ShowDuration(time.Duration(t.Lifetime)*time.Second)
			if d.Constraints = ConstraintWords(*t); len(d.Constraints) == 0 {
				d.Constraints = []string{"none"}
			}
		} else {
			d.Uses, d.Lifetime, d.Constraints = notRecorded, notRecorded, []string{notRecorded}
		}
	case r.SideEffects == "none" || r.SideEffects == "read":
		d.Undo = UndoReadOnly
	case r.Reversibility == Reversible && r.UndoWindowMS > 0:
		d.Undo = "can be undone within " + ShowDuration(time.Duration(r.UndoWindowMS)*time.Millisecond) + " after it runs"
	case r.Reversibility == Reversible:
		d.Undo = "reversible, the app says, but it gives no undo window: capgate cannot undo it"
	case r.Reversibility == Compensable && r.Remedy != "":
		d.Undo = "cannot be undone, but can be made good with " + r.Remedy
	default:
		d.Undo, d.Irreversible = UndoNever, true
	}
	d.Lookalikes = r.lookalikes()
	return d
}

// UsesWords says a token's use limit: "at most 1000 uses", "at most 1 use", "no limit on
// uses" for 0.
func UsesWords(maxUses int64) string {
	switch {
	case maxUses <= 0:
		return "no limit on uses"
	case maxUses == 1:
		return "at most 1 use"
	}
	return "at most " + strconv.FormatInt(maxUses, 10) + " uses"
}

// FiringsWords says a trigger's count budget: "at most 1 firing", "at most 30 firings".
func FiringsWords(n int64) string {
	if n == 1 {
		return "at most 1 firing"
	}
	return "at most " + strconv.FormatInt(n, 10) + " firings"
}

// TriggerWords says a proposed trigger in words, one line each, in the order the person
// reads them: when, only if, then, budget, until, missed firings, mandate.
func TriggerWords(t TriggerTerms) []string {
	out := []string{"when: " + t.Event}
	if t.Condition != "" {
		out = append(out, "only if this CEL condition holds for the event: "+t.Condition)
	}
	out = append(out, "then: "+t.Capability+", with the params shown (fixed: no event can change them)")
	budget := FiringsWords(t.MaxFirings)
	if t.Budget != "" {
		budget += "; " + t.Budget
	}
	out = append(out, "budget: "+budget)
	out = append(out, "until: "+t.EndsAt.UTC().Format("2006-01-02 15:04 UTC")+", then it stops for good")
	if t.Missed == "once" {
		out = append(out, "firings missed while capgate was down: run once when it is back")
	} else {
		out = append(out, "firings missed while capgate was down: skipped")
	}
	out = append(out, "bound to your mandate for "+t.Mandate+": every firing is decided afresh under it, and it never does more than the mandate allows")
	return out
}

// ConstraintWords says a token's constraints beyond its uses in words, one each, nil for
// none; the CEL condition is shown as the text it is. The approval page says a live
// token's constraints with it too.
func ConstraintWords(t TokenTerms) []string {
	var out []string
	for _, l := range t.lists() {
		if len(l.list) > 0 {
			out = append(out, l.words+strings.Join(l.list, ", "))
		}
	}
	if t.Condition != "" {
		out = append(out, "only when this CEL condition holds: "+t.Condition)
	}
	return out
}

// lookalikes runs Lookalikes on every text of r that an agent, an app or a tool server
// supplied, in the order the page shows them, and on every string (and member name) of
// the params.
func (r Request) lookalikes() []Lookalike {
	var out []Lookalike
	check := func(field, s string) {
		if len(out) == MaxLookalikes {
			return
		}
		if l := Lookalikes(s); !l.OK() {
			l.Field = field
			out = append(out, l)
		}
	}
	check("client_name", r.ClientName)
	check("summary", r.Summary)
	check("capability_id", r.CapabilityID)
	check("permission", r.Permission)
	for i, g := range r.Grants {
		check("grants["+strconv.Itoa(i)+"]", g)
	}
	if t := r.Trigger; t != nil {
		check("trigger.event", t.Event)
		check("trigger.condition", t.Condition)
	}
	if t := r.Token; t != nil {
		for _, l := range t.lists() {
			for i, e := range l.list {
				check(l.field+"["+strconv.Itoa(i)+"]", e)
			}
		}
		check("token.condition", t.Condition)
	}
	check("remedy", r.Remedy)
	check("reason", r.Reason)
	check("audit_tag", r.AuditTag)
	check("wording", r.Wording)
	for i, l := range r.Difference {
		check("difference["+strconv.Itoa(i)+"]", l)
	}
	if len(r.Params) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Params))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			walkParams(v, "params", check)
		} else {
			check("params", string(r.Params))
		}
	}
	return out
}

// walkParams calls check with the path and text of every string in v, and of every member
// name (its path then ends in " (name)"), members in name order. Member names in a path
// have their characters outside ASCII escaped, so that a path cannot hide what it names.
func walkParams(v any, path string, check func(field, s string)) {
	switch x := v.(type) {
	case string:
		check(path, x)
	case []any:
		for i, e := range x {
			walkParams(e, path+"["+strconv.Itoa(i)+"]", check)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := path + "." + escapeNonASCII(k)
			check(p+" (name)", k)
			walkParams(x[k], p, check)
		}
	}
}
