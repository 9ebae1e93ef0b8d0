package intent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules credential intents and environment scopes can break. None contains any part of the
// value checked.
const (
	ruleCredentialGrammar = "must match ^[a-z][a-z0-9._-]{0,127}$"
	ruleCredentialCatalog = "must name an entry of the host's credential catalog"
	ruleEnvEmpty          = "must not be empty"
	ruleEnvLength         = "must be at most 255 bytes"
	ruleEnvChars          = "must be valid UTF-8 of printable characters without spaces"
	ruleEnvEvery          = "must name one environment or tag, never a word for every environment"
	ruleEnvUnknown        = "must name an environment or tag the host knows"
	ruleScopeEmpty        = "must not be empty: an empty scope is never read as every environment"
)

// CredentialRule returns "" when name may be a credential intent under h, or the rule it
// breaks: it matches ^[a-z][a-z0-9._-]{0,127}$ and, when h.Credentials is not nil, is in the
// catalog with the value true.
func CredentialRule(name string, h Host) string {
	if name == "" || len(name) > MaxCredentialBytes || name[0] < 'a' || name[0] > 'z' {
		return ruleCredentialGrammar
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return ruleCredentialGrammar
		}
	}
	if h.Credentials != nil && !h.Credentials[name] {
		return ruleCredentialCatalog
	}
	return ""
}

// EnvironmentRule returns "" when name may be an entry of a capability's environment_scope
// under h, or the rule it breaks: it is not empty, at most MaxEnvironmentBytes of printable
// UTF-8 without spaces, not "all" in any case nor "*" (a scope names environments, it never
// means every one), and, when h.Environments is not nil, known to the host with the value true.
func EnvironmentRule(name string, h Host) string {
	switch {
	case name == "":
		return ruleEnvEmpty
	case len(name) > MaxEnvironmentBytes:
		return ruleEnvLength
	case !utf8.ValidString(name):
		return ruleEnvChars
	}
	for _, c := range name {
		if c == utf8.RuneError || c == ' ' || !unicode.IsPrint(c) {
			return ruleEnvChars
		}
	}
	if strings.EqualFold(name, "all") || name == "*" {
		return ruleEnvEvery
	}
	if h.Environments != nil && !h.Environments[name] {
		return ruleEnvUnknown
	}
	return ""
}
