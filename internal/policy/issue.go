package policy

import (
	"strings"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// AlwaysConsent are the permissions whose tokens are issued only with the person's consent,
// whatever their risk: the token document's "sensitive operations".
var AlwaysConsent = []string{
	"fs.delete",
	"app.terminal.execute",
	"app.python.execute",
	"system.network.write",
	"system.settings.write",
}

// NeedsConsentToIssue reports whether issuing a token with these grants needs the person's
// consent. It does when any grant:
//
//   - covers one of AlwaysConsent (so "fs.*" needs consent, for it covers fs.delete), or
//     names something beneath one ("fs.delete.*", "fs.delete.tmp");
//   - covers a permission whose risk is medium or high: riskOf returns the highest risk of the
//     registered capabilities the grant covers;
//   - covers no registered capability, or one of unknown risk (riskOf returns "" or a value
//     that is not a Risk), because what cannot be judged is not issued silently.
//
// A nil riskOf knows nothing, so every grant needs consent. No grants need no consent.
func NeedsConsentToIssue(grants []string, riskOf func(grant string) manifest.Risk) bool {
	for _, g := range grants {
		for _, p := range AlwaysConsent {
			if token.Covers([]string{g}, p) || strings.HasPrefix(g, p+".") {
				return true
			}
		}
		if riskOf == nil {
			return true
		}
		if r := riskOf(g); r != manifest.RiskLow {
			return true
		}
	}
	return false
}
