package intent

import (
	"strings"
	"testing"
)

var credentialRules = map[string]bool{ruleCredentialGrammar: true, ruleCredentialCatalog: true}

var environmentRules = map[string]bool{
	ruleEnvEmpty: true, ruleEnvLength: true, ruleEnvChars: true, ruleEnvEvery: true, ruleEnvUnknown: true,
}

// assertRule checks rule against want: "" wants value accepted, anything else refused as
// assertRefusal checks.
func assertRule(t *testing.T, value, rule, want string, known map[string]bool) {
	t.Helper()
	if want == "" {
		if rule != "" {
			t.Fatalf("refused: %s", rule)
		}
		return
	}
	assertRefusal(t, value, rule, want, "", known)
}

func TestCredentialRule(t *testing.T) {
	catalog := Host{Credentials: map[string]bool{"scm.github.api": true, "revoked.token": false}}
	for _, tc := range []struct {
		name, cred string
		h          Host
		want       string // "" accepted
	}{
		{"github", "scm.github.api", Host{}, ""},
		{"one letter", "a", Host{}, ""},
		{"all classes", "a0._-z", Host{}, ""},
		{"longest", "a" + strings.Repeat("b", 127), Host{}, ""},
		{"in catalog", "scm.github.api", catalog, ""},
		{"empty", "", Host{}, ruleCredentialGrammar},
		{"too long", "a" + strings.Repeat("b", 128), Host{}, ruleCredentialGrammar},
		{"upper", "Scm.Github.Api", Host{}, ruleCredentialGrammar},
		{"digit first", "9scm.github", Host{}, ruleCredentialGrammar},
		{"dot first", ".scm.github", Host{}, ruleCredentialGrammar},
		{"space", "scm github", Host{}, ruleCredentialGrammar},
		{"slash", "scm/github", Host{}, ruleCredentialGrammar},
		{"trailing newline", "scm.github.api\n", Host{}, ruleCredentialGrammar},
		{"non-ascii", "scm.g\u0456thub", Host{}, ruleCredentialGrammar},
		{"nul", "scm.github\x00", Host{}, ruleCredentialGrammar},
		{"not in catalog", "scm.gitlab.api", catalog, ruleCredentialCatalog},
		{"false in catalog", "revoked.token", catalog, ruleCredentialCatalog},
		{"empty catalog", "scm.github.api", Host{Credentials: map[string]bool{}}, ruleCredentialCatalog},
		{"grammar before catalog", "Scm.Gitlab", catalog, ruleCredentialGrammar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertRule(t, tc.cred, CredentialRule(tc.cred, tc.h), tc.want, credentialRules)
		})
	}
}

func TestEnvironmentRule(t *testing.T) {
	known := Host{Environments: map[string]bool{"dev": true, "staging": true, "retired": false}}
	for _, tc := range []struct {
		name, env string
		h         Host
		want      string
	}{
		{"dev", "dev", Host{}, ""},
		{"tag", "region:eu-west", Host{}, ""},
		{"known", "staging", known, ""},
		{"all", "all", Host{}, ruleEnvEvery},
		{"ALL", "ALL", Host{}, ruleEnvEvery},
		{"All", "All", Host{}, ruleEnvEvery},
		{"star", "*", Host{}, ruleEnvEvery},
		{"all known to host", "all", Host{Environments: map[string]bool{"all": true}}, ruleEnvEvery},
		{"empty", "", Host{}, ruleEnvEmpty},
		{"too long", strings.Repeat("e", 256), Host{}, ruleEnvLength},
		{"space", "prod eu", Host{}, ruleEnvChars},
		{"padded", " production ", Host{}, ruleEnvChars},
		{"newline", "production\n", Host{}, ruleEnvChars},
		{"invalid utf8", "prod\xff", Host{}, ruleEnvChars},
		{"bidi", "prod\u202euction", Host{}, ruleEnvChars},
		{"unknown", "production", known, ruleEnvUnknown},
		{"false", "retired", known, ruleEnvUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := tc.env
			if len(value) < 3 { // "*" appears in no rule, but keep the echo check meaningful
				value = ""
			}
			assertRule(t, value, EnvironmentRule(tc.env, tc.h), tc.want, environmentRules)
		})
	}
}
