package token

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Request is what a derived token asks for. Every field is explicit: nothing is copied from
// the parent but the client binding, the consent, and the denied lists and condition, which a
// child can only add to.
type Request struct {
	// Capabilities are the child's grants, each covered by a grant of the parent.
	Capabilities []string
	// ExpiresAt is the child's expiry, Unix seconds: after now, at most the parent's.
	ExpiresAt int64
	// Constraints are the child's, each at least as strict as the parent's. Its MaxUses is
	// the child's limit: at most the parent's, and not 0 (no limit) when the parent has one.
	Constraints Constraints
	// AuditTag is the child's purpose; empty keeps the parent's.
	AuditTag string
}

// Derive returns a new token, unsigned, within parent: it grants no permission the parent
// does not, expires no later, allows no more uses, allows no path, command or call the parent
// refuses, and is bound to the same client. The child's condition is "(parent) && (child)"
// (or the one of them that is set); its denied lists must include the parent's entries. It
// gets a fresh token_id, parent_id set to the parent's, issued_at now. A parent that is not
// valid at now is ErrExpired or ErrNotYetValid; a request wider than the parent is every
// reason at once, each wrapping ErrNotNarrower with the field; a child that breaks an
// issue-time rule wraps ErrInvalid. Uses of the child count against the parent too; that is
// the store's.
//
// Path patterns are compared as written and also as resolved on disk now; a symbolic link
// made later under a pattern's literal part is not seen here (see the package's path notes).
func Derive(parent Token, req Request, now time.Time) (Token, error) {
	if err := parent.CheckTime(now); err != nil {
		return Token{}, fmt.Errorf("derive: parent: %w", err)
	}
	var errs []error
	bad := func(field, rule string) { errs = append(errs, notNarrower(field, rule)) }

	if len(req.Capabilities) == 0 {
		bad("capabilities", "must not be empty")
	}
	for i, g := range req.Capabilities {
		if !validGrant(g) || !slices.ContainsFunc(parent.Capabilities, func(p string) bool { return validGrant(p) && grantWithin(g, p) }) {
			bad(fmt.Sprintf("capabilities[%d]", i), "must be covered by a grant of the parent")
		}
	}
	if req.ExpiresAt > parent.ExpiresAt {
		bad("expires_at", "must not be after the parent's")
	}
	if req.ExpiresAt <= now.Unix() {
		bad("expires_at", "must be after now")
	}
	pc, cc := parent.Constraints, req.Constraints
	if pc.MaxUses > 0 && (cc.MaxUses <= 0 || cc.MaxUses > pc.MaxUses) {
		bad("constraints.max_uses", "must be 1 to the parent's max_uses")
	}
	if len(pc.AllowedPaths) > 0 {
		if len(cc.AllowedPaths) == 0 {
			bad("constraints.allowed_paths", "must not be empty when the parent's is not")
		}
		for i, p := range cc.AllowedPaths {
			if !pathPatternWithin(p, pc.AllowedPaths) {
				bad(fmt.Sprintf("constraints.allowed_paths[%d]", i), "must be within a pattern of the parent")
			}
		}
	}
	if len(pc.AllowedCommands) > 0 {
		if len(cc.AllowedCommands) == 0 {
			bad("constraints.allowed_commands", "must not be empty when the parent's is not")
		}
		for i, e := range cc.AllowedCommands {
			if !commandWithin(e, pc.AllowedCommands) {
				bad(fmt.Sprintf("constraints.allowed_commands[%d]", i), "must be within an entry of the parent")
			}
		}
	}
	for _, l := range []struct {
		name          string
		parent, child []string
	}{
		{"constraints.denied_commands", pc.DeniedCommands, cc.DeniedCommands},
		{"constraints.denied_patterns", pc.DeniedPatterns, cc.DeniedPatterns},
	} {
		for _, e := range l.parent {
			if !slices.Contains(l.child, e) {
				bad(l.name, "must include every entry of the parent's")
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Token{}, err
	}

	cond := cc.Condition
	switch {
	case pc.Condition != "" && cc.Condition != "":
		cond = "(" + pc.Condition + ") && (" + cc.Condition + ")"
	case pc.Condition != "":
		cond = pc.Condition
	}
	child := Token{
		ID:           NewID(),
		Version:      Version,
		IssuedAt:     now.Unix(),
		ExpiresAt:    req.ExpiresAt,
		Capabilities: slices.Clone(req.Capabilities),
		Constraints:  cc.clone(),
		AuditTag:     req.AuditTag,
		Issuer:       Issuer,
		ClientID:     parent.ClientID,
		ParentID:     parent.ID,
		ConsentID:    parent.ConsentID,
	}
	child.Constraints.Condition = cond
	if child.AuditTag == "" {
		child.AuditTag = parent.AuditTag
	}
	if err := Validate(child); err != nil {
		return Token{}, err
	}
	return child, nil
}

// pathPatternWithin reports whether the pattern s is within one of parents, both as written
// and as resolved on disk now.
func pathPatternWithin(s string, parents []string) bool {
	c, rule := parsePattern(s)
	if rule != "" {
		return false
	}
	rc, err := c.resolve()
	if err != nil {
		return false
	}
	for _, ps := range parents {
		p, rule := parsePattern(ps)
		if rule != "" {
			continue
		}
		rp, err := p.resolve()
		if err != nil {
			continue
		}
		if c.within(p) && rc.within(rp) {
			return true
		}
	}
	return false
}

func commandWithin(e string, parents []string) bool {
	c, ok := parseAllowRule(e)
	if !ok {
		return false
	}
	for _, ps := range parents {
		if p, ok := parseAllowRule(ps); ok && c.within(p) {
			return true
		}
	}
	return false
}
