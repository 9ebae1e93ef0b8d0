package yamljson

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzConvert checks that Convert never panics, that what it accepts is valid
// JSON, that it is deterministic, and that every failure is an *Error whose
// rule is one of the fixed rule texts.
func FuzzConvert(f *testing.F) {
	for _, tc := range convertCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(manifestYAML))
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = Convert(data); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatalf("HANG")
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if !knownRules[e.Rule] {
				t.Fatalf("rule %q is not a fixed rule text", e.Rule)
			}
			if out != nil {
				t.Fatalf("output %q alongside error %v", out, err)
			}
			return
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("invalid JSON %q from %q", out, data)
		}
		again, err := Convert(data)
		if err != nil || string(again) != string(out) {
			t.Fatalf("second run gave %q, %v; first %q", again, err, out)
		}
	})
}

// knownRules is every rule text Convert may report.
var knownRules = map[string]bool{}

func init() {
	for _, r := range []string{
		ruleNotUTF8, ruleBareCR, ruleBadChar, ruleMidDocBOM, ruleSyntax,
		ruleParserFail, ruleDropped, ruleQuotePos, ruleQuoteDiffers,
		ruleEmptyDoc, ruleMultiDoc, ruleDirective, ruleUnsupported,
		ruleAnchor, ruleAlias, ruleExplicitKey, ruleMergeKey,
		ruleDuplicateKey, ruleKeyNotString, ruleTag, ruleTagMismatch,
		ruleNonFinite, ruleLeadingZero, ruleAmbiguousNum, ruleBadEscape,
		ruleSurrogate, ruleStringUTF8, ruleTooLarge, ruleTooDeep,
		ruleTooMany, ruleManyKeys, ruleTooMuch, ruleScanDeep, ruleScanMany,
		ruleScanKeys,
	} {
		knownRules[r] = true
	}
}
