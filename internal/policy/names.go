package policy

import (
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// What explanations may repeat of their input. Only names that parse as what they claim to be,
// and words from closed lists, are repeated; anything else is replaced by a placeholder, so
// that a token, a key or a param value planted in a field of the input never reaches a person
// or an agent through an explanation.

// capabilityName is id when it is a valid capability id. Ids arrive parsed (Call.CapabilityID),
// so naming one costs nothing: an id that did not parse is the zero CapabilityID.
func capabilityName(id manifest.CapabilityID) string {
	if !id.IsValid() {
		return "the capability (its id is not well formed)"
	}
	return id.String()
}

// permissionName is p when it is a valid permission.
func permissionName(p manifest.Permission) string {
	if !p.IsValid() {
		return "(a permission that is not well formed)"
	}
	return p.String()
}

// fieldPath is p when it looks like a field path: at most MaxFieldPathBytes of ASCII
// letters, digits and the punctuation of JSON pointers and index paths (/ . [ ] _ -).
func fieldPath(p string) string {
	if p == "" || len(p) > MaxFieldPathBytes {
		return "(a field)"
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("/.[]_-", c) >= 0) {
			return "(a field)"
		}
	}
	return p
}

// fieldPaths lists at most MaxListedProblems field paths and counts the rest.
func fieldPaths(ps []string) string {
	var b strings.Builder
	for i, p := range ps {
		if i == MaxListedProblems {
			b.WriteString(" and ")
			b.WriteString(strconv.Itoa(len(ps) - i))
			b.WriteString(" more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(fieldPath(p))
	}
	return b.String()
}

// constraintRules are the rules token.Constraints.Check reports.
var constraintRules = []string{
	token.RuleAllowedPaths, token.RuleAllowedCommands, token.RuleDeniedCommands,
	token.RuleDeniedPatterns, token.RuleCondition, token.RuleUnclassified, token.RuleCommandInput,
	token.RuleInterpreter, token.RuleRunner, token.RuleEnvironment, token.RuleRunsByOpt, token.RuleNamesInput,
	token.ErrCommandEmpty.Error(), token.ErrCommandText.Error(), token.ErrCommandQuote.Error(),
	token.ErrCommandOperator.Error(), token.ErrCommandExpansion.Error(),
	token.ErrCommandShellGlob.Error(), token.ErrCommandTooMany.Error(),
	token.ErrCommandWrapper.Error(), token.ErrCommandTooNested.Error(),
}

// constraintRule is rule when it is one that Check reports, else "".
func constraintRule(rule string) string {
	for _, r := range constraintRules {
		if rule == r {
			return r
		}
	}
	return ""
}

// tokenErrors are the errors of package token that say why a token is not valid.
var tokenErrors = []error{
	token.ErrMalformed, token.ErrBadSignature, token.ErrWrongClient, token.ErrNotYetValid,
	token.ErrExpired, token.ErrInvalid,
}

// invalidReason is the text of the token error reason starts with (without whatever the
// error was wrapped with), or "" when it starts with none.
func invalidReason(reason string) string {
	for _, e := range tokenErrors {
		if t := e.Error(); reason == t || strings.HasPrefix(reason, t+":") {
			return t
		}
	}
	return ""
}

// trustWord is the name of a known auth level, or a placeholder.
func trustWord(a manifest.AuthLevel) string {
	if a.Valid() {
		return string(a)
	}
	return "(an unknown level)"
}

// allowed holds "allowed: ID may act" per capability name, the explanation of every call
// allowed at act: made once per capability rather than on every decision. A decision reads
// the published map with no lock (a read lock's atomic adds, or sync.Map's hashing of the
// name as an interface, cost more than the lookup); a new name goes into dirty, under mu,
// and dirty is merged into a new published map once it holds an eighth as many as that one,
// so that each name is copied a few times at most.
var allowed struct {
	read  atomic.Pointer[map[string]string]
	mu    sync.Mutex
	dirty map[string]string // names not yet in read
}

// allowedText is the explanation of a call of the capability named id allowed at act.
func allowedText(id string) string {
	read := allowed.read.Load()
	if read != nil {
		if text, ok := (*read)[id]; ok {
			return text
		}
	}
	allowed.mu.Lock()
	defer allowed.mu.Unlock()
	var published map[string]string
	if read = allowed.read.Load(); read != nil {
		published = *read // merged since the look above, perhaps
	}
	if text, ok := published[id]; ok {
		return text
	}
	if text, ok := allowed.dirty[id]; ok {
		return text
	}
	text := "allowed: " + id + " may act"
	// The names are the registry's capabilities, and a few made up by callers of Decide; past
	// the bound, a name's text is made each time instead of kept.
	if len(published)+len(allowed.dirty) >= maxAllowedTexts {
		return text
	}
	if allowed.dirty == nil {
		allowed.dirty = map[string]string{}
	}
	allowed.dirty[id] = text
	if len(allowed.dirty) > len(published)/8 {
		merged := make(map[string]string, len(published)+len(allowed.dirty))
		maps.Copy(merged, published)
		maps.Copy(merged, allowed.dirty)
		allowed.read.Store(&merged)
		allowed.dirty = nil
	}
	return text
}
