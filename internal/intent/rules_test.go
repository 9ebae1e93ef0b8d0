package intent

import (
	"strings"
	"testing"
)

// The closed sets of rules each check can return. Every rule is a constant or is built from
// constants and the special-range table, never from the value checked; the tests and fuzz
// targets assert that every refusal is one of these, which is what "never the offending
// value" means in a form a test can hold.

var hostConstRules = []string{
	ruleHostEmpty, ruleHostLength, ruleHostASCII, ruleHostSpace, ruleHostScheme,
	ruleHostUserinfo, ruleHostPath, ruleHostWildcard, ruleHostZone, ruleHostBrackets,
	ruleHostTrailingDot, ruleHostPort, ruleHostMalformed, ruleIPv6Canonical, ruleIPv4Numeric,
	ruleHostUpper, ruleHostChars, ruleHostEmptyLabel, ruleHostLabelLength, ruleHostLabelHyphen,
	ruleHostTwoLabels, ruleHostNumericLabel, ruleHostSpecialName, ruleHostMetadataName,
}

// knownHostRules returns every rule HostRule can return.
func knownHostRules() map[string]bool {
	set := map[string]bool{}
	for _, r := range hostConstRules {
		set[r] = true
	}
	addr := []string{ruleOutsideGlobal6, ruleHostZone}
	for _, e := range specialRanges {
		addr = append(addr, e.rule())
	}
	for _, a := range addr {
		set[a] = true
		set[ruleIPv4Numeric+ruleDenotes+a] = true
		set[ruleIPv6Canonical+ruleDenotes+a] = true
	}
	return set
}

var pathRules = []string{
	rulePathEmpty, rulePathLength, rulePathUTF8, rulePathNUL, rulePathBackslash, rulePathBidi,
	rulePathZeroWidth, rulePathReplacement, rulePathPrintable, rulePathNFC, rulePathAbsolute,
	rulePathEmptySegment, rulePathDotSegment, rulePathSegment, rulePathOutside,
	rulePathProtected, rulePathBadRoot, rulePathDiskRoot, rulePathDiskError, rulePathDiskLink,
	rulePathDiskOutside, rulePathDiskProt,
}

func knownPathRules() map[string]bool {
	set := map[string]bool{}
	for _, r := range pathRules {
		set[r] = true
	}
	return set
}

// assertRefusal checks that rule refuses value for the expected reason (want is a prefix of
// the rule, also says what the address denotes) and does not echo the value.
func assertRefusal(t *testing.T, value, rule, want, also string, known map[string]bool) {
	t.Helper()
	if rule == "" {
		t.Fatalf("accepted, want refused with %q", want)
	}
	if !strings.HasPrefix(rule, want) {
		t.Errorf("rule = %q, want one starting %q", rule, want)
	}
	if also != "" && !strings.Contains(rule, also) {
		t.Errorf("rule = %q, want it to mention %q", rule, also)
	}
	if value != "" && strings.Contains(strings.ToLower(rule), strings.ToLower(value)) {
		t.Errorf("rule %q contains the offending value", rule)
	}
	if known != nil && !known[rule] {
		t.Errorf("rule %q is not one of the package's fixed rules", rule)
	}
}
