package policy

import (
	"testing"

	"github.com/capgate/capgate/manifest"
)

func TestNeedsConsentToIssue(t *testing.T) {
	// registry: the highest risk of the capabilities a grant covers.
	risks := map[string]manifest.Risk{
		"notes.read":     manifest.RiskLow,
		"notes.write":    manifest.RiskMedium,
		"notes.*":        manifest.RiskMedium,
		"mail.send":      manifest.RiskHigh,
		"fs.read":        manifest.RiskLow,
		"fs.*":           manifest.RiskLow, // even if the registry thought so, fs.* covers fs.delete
		"fs.delete":      manifest.RiskLow, // an always-consent permission, whatever its risk
		"media.*":        manifest.RiskLow,
		"fs.delete.*":    manifest.RiskLow, // beneath an always-consent permission
		"fs.delete.tmp":  manifest.RiskLow,
		"odd.risk":       "extreme",
		"system.*":       manifest.RiskLow,
		"app.terminal.*": manifest.RiskLow,
	}
	riskOf := func(g string) manifest.Risk { return risks[g] }
	tests := []struct {
		name   string
		grants []string
		want   bool
	}{
		{"no grants", nil, false},
		{"low risk", []string{"notes.read", "fs.read"}, false},
		{"low-risk pattern", []string{"media.*"}, false},
		{"medium risk", []string{"notes.read", "notes.write"}, true},
		{"high risk", []string{"mail.send"}, true},
		{"medium-risk pattern", []string{"notes.*"}, true},
		{"always-consent permission", []string{"fs.delete"}, true},
		{"pattern covering fs.delete", []string{"fs.*"}, true},
		{"pattern covering system.settings.write", []string{"system.*"}, true},
		{"pattern covering app.terminal.execute", []string{"app.terminal.*"}, true},
		{"pattern beneath an always-consent permission", []string{"fs.delete.*"}, true},
		{"permission beneath an always-consent permission", []string{"fs.delete.tmp"}, true},
		{"a neighbour of an always-consent permission", []string{"fs.read"}, false},
		{"app.python.execute", []string{"app.python.execute"}, true},
		{"system.network.write", []string{"system.network.write"}, true},
		{"unknown permission fails closed", []string{"notes.read", "weather.read"}, true},
		{"unknown risk value fails closed", []string{"odd.risk"}, true},
		{"malformed grant fails closed", []string{"*"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsConsentToIssue(tt.grants, riskOf); got != tt.want {
				t.Errorf("NeedsConsentToIssue(%q) = %v, want %v", tt.grants, got, tt.want)
			}
		})
	}
	if !NeedsConsentToIssue([]string{"notes.read"}, nil) {
		t.Error("a nil riskOf needs no consent")
	}
}
