package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzConvert checks that Convert never panics, that what it accepts is valid
// JSON, that it is deterministic, that its output, JSON being YAML, converts
// to itself, and that every failure is an *Error whose rule is one of the
// fixed rule texts.
func FuzzConvert(f *testing.F) {
	for _, tc := range convertCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(manifestYAML))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Convert(data)
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
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("second run gave %q, %v; first %q", again, err, out)
		}
		round, err := Convert(out)
		if err != nil || !bytes.Equal(round, out) {
			t.Fatalf("output %q converts to %q, %v", out, round, err)
		}
	})
}

// knownRules is every rule text Convert may report.
var knownRules = map[string]bool{}

func init() {
	for _, r := range []string{
		ruleNotUTF8, ruleBareCR, ruleBadChar, ruleMidDocBOM, ruleSyntax,
		ruleParserFail, ruleDropped, ruleFinalBreak, ruleQuotePos, ruleQuoteDiffers,
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
