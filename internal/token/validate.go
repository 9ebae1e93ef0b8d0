package token

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks the rules a token must meet to be issued, and returns every problem at
// once (errors.Join), each wrapping ErrInvalid and naming the field and the rule, never the
// value: token_id, version and issuer well formed; client_id set; parent_id a token_id when
// set; consent_id, audit_tag and client_id short printable text; one to MaxGrants
// capabilities, each a permission or a pattern ending in ".*"; issued_at before expires_at,
// at most MaxLifetime apart; and well-formed constraints (see Constraints.Validate). It
// does not look at the signature, the clock, or the store.
func Validate(t Token) error {
	var errs []error
	add := func(field, rule string) { errs = append(errs, invalid(field, rule)) }
	if !validID(t.ID) {
		add("token_id", "must be "+IDPrefix+" and 32 lowercase hex digits")
	}
	if t.Version != Version {
		add("version", "must be "+Version)
	}
	if t.Issuer != Issuer {
		add("issuer", "must be "+Issuer)
	}
	if t.ClientID == "" || !validText(t.ClientID) {
		add("client_id", "must be 1 to MaxFieldBytes bytes of printable UTF-8")
	}
	if t.ParentID != "" && !validID(t.ParentID) {
		add("parent_id", "must be empty or a token_id")
	}
	if !validText(t.ConsentID) {
		add("consent_id", "must be at most MaxFieldBytes bytes of printable UTF-8")
	}
	if !validText(t.AuditTag) {
		add("audit_tag", "must be at most MaxFieldBytes bytes of printable UTF-8")
	}
	switch n := len(t.Capabilities); {
	case n == 0:
		add("capabilities", "must not be empty")
	case n > MaxGrants:
		add("capabilities", "must have at most MaxGrants entries")
	default:
		for i, g := range t.Capabilities {
			if !validGrant(g) {
				add(fmt.Sprintf("capabilities[%d]", i), "must be a permission or a pattern such as fs.*")
			}
		}
	}
	switch {
	case t.IssuedAt < 0 || t.IssuedAt > maxSafeInteger:
		add("issued_at", "must be in 0..2^53-1")
	case t.ExpiresAt <= t.IssuedAt || t.ExpiresAt > maxSafeInteger:
		add("expires_at", "must be after issued_at")
	case t.ExpiresAt-t.IssuedAt > int64(MaxLifetime/time.Second):
		add("expires_at", "must be at most MaxLifetime after issued_at")
	}
	if err := t.Constraints.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Validate checks that every constraint is well formed, and returns every problem at once,
// each wrapping ErrInvalid with its field path (constraints.allowed_paths[2]).
func (c Constraints) Validate() error {
	var errs []error
	add := func(field, rule string) { errs = append(errs, invalid("constraints."+field, rule)) }
	if c.MaxUses < 0 || c.MaxUses > maxSafeInteger {
		add("max_uses", "must be in 0..2^53-1 (0 is no limit)")
	}
	lists := []struct {
		name    string
		entries []string
		check   func(string) string
	}{
		{"allowed_paths", c.AllowedPaths, func(s string) string { _, rule := parsePattern(s); return rule }},
		{"allowed_commands", c.AllowedCommands, func(s string) string {
			if _, ok := parseAllowRule(s); !ok {
				return "must be a program (a name or a clean absolute path) and optional words, with no shell operator"
			}
			return ""
		}},
		{"denied_commands", c.DeniedCommands, checkDeny},
		{"denied_patterns", c.DeniedPatterns, checkDeny},
	}
	for _, l := range lists {
		if len(l.entries) > MaxListEntries {
			add(l.name, "must have at most MaxListEntries entries")
			continue
		}
		for i, e := range l.entries {
			if rule := l.check(e); rule != "" {
				add(fmt.Sprintf("%s[%d]", l.name, i), rule)
			}
		}
	}
	if c.Condition != "" {
		if len(c.Condition) > MaxConditionBytes {
			add("condition", "must be at most MaxConditionBytes bytes")
		} else if err := CompileCondition(c.Condition); err != nil {
			errs = append(errs, fmt.Errorf("%w: constraints.condition: %w", ErrInvalid, err))
		}
	}
	return errors.Join(errs...)
}

func checkDeny(s string) string {
	if _, ok := parseDenyRule(s); !ok {
		return "must be a program and optional words, with no shell operator"
	}
	return ""
}

// validText reports whether s is at most MaxFieldBytes of valid UTF-8 without control
// characters.
func validText(s string) bool {
	if len(s) > MaxFieldBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}
