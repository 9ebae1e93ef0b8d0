package yamljson

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// nestedFlow is n flow sequences, each inside the last.
func nestedFlow(n int) string {
	return strings.Repeat("[", n) + strings.Repeat("]", n)
}

// nestedBlock is n block mappings, each the value of key k in the last.
func nestedBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "v\n")
	return b.String()
}

// flowSeq is a flow sequence of n zeros.
func flowSeq(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

// blockKeys is a block mapping of n distinct keys, indented by indent.
func blockKeys(n int, indent string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(indent + "k" + strconv.Itoa(i) + ": 0\n")
	}
	return b.String()
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		rule string // "" means accepted
		path string
		line int
	}{
		{name: "input at the size limit", in: "a: " + strings.Repeat("x", MaxInputBytes-4) + "\n"},
		{name: "input over the size limit", in: "a: " + strings.Repeat("x", MaxInputBytes-3) + "\n", rule: ruleTooLarge},

		{name: "flow nesting at the limit", in: nestedFlow(MaxDepth)},
		{name: "flow nesting over the limit", in: nestedFlow(MaxDepth + 1), rule: ruleTooDeep, path: strings.Repeat("[0]", MaxDepth), line: 1},
		{name: "block nesting at the limit", in: nestedBlock(MaxDepth)},
		{name: "block nesting over the limit", in: nestedBlock(MaxDepth + 1), rule: ruleTooDeep, path: strings.TrimSuffix(strings.Repeat("k.", MaxDepth), "."), line: MaxDepth + 1},
		{name: "flow nesting refused before parsing", in: nestedFlow(scanSlack*MaxDepth + 1), rule: ruleScanDeep, line: 1},
		{name: "very deep flow nesting", in: nestedFlow(200_000), rule: ruleScanDeep, line: 1},
		{name: "very deep compact sequences", in: strings.Repeat("- ", 200_000) + "x\n", rule: ruleScanDeep, line: 1},

		{name: "nodes at the limit", in: flowSeq(MaxNodes - 1)},
		{name: "nodes over the limit", in: flowSeq(MaxNodes), rule: ruleTooMany, path: "[" + strconv.Itoa(MaxNodes-1) + "]", line: 1},
		{name: "nodes refused before parsing", in: flowSeq(scanSlack * MaxNodes), rule: ruleScanMany, line: 1},

		{name: "keys at the limit", in: blockKeys(MaxMappingKeys, "")},
		{name: "keys over the limit", in: blockKeys(MaxMappingKeys+1, ""), rule: ruleManyKeys, line: MaxMappingKeys + 1},
		{name: "nested keys over the limit", in: "a:\n" + blockKeys(MaxMappingKeys+1, "  "), rule: ruleManyKeys, path: "a", line: MaxMappingKeys + 2},
		{name: "flow keys over the limit", in: "{" + strings.TrimSuffix(strings.ReplaceAll(blockKeys(MaxMappingKeys+1, ""), "\n", ","), ",") + "}", rule: ruleManyKeys, line: 1},
		{name: "keys refused before parsing", in: blockKeys(scanSlack*MaxMappingKeys+1, ""), rule: ruleScanKeys, line: scanSlack*MaxMappingKeys + 1},
		// The pre-scan must not add up keys of different mappings.
		{name: "many small mappings in a sequence", in: strings.Repeat("- a: 1\n  b: 2\n", 3*MaxMappingKeys)},
		{name: "many zero-indented sequences under keys", in: strings.ReplaceAll(blockKeys(3*MaxDepth, ""), ": 0\n", ":\n- x: 1\n")},
		{name: "many small mappings under keys", in: strings.ReplaceAll(blockKeys(MaxMappingKeys-1, ""), ": 0\n", ":\n  a: 1\n  b: 2\n  c: 3\n")},

		{name: "long key over many nodes", in: strings.Repeat("k", 40_000) + ": " + flowSeq(2_000) + "\n", rule: ruleTooMuch, line: 1},
		{name: "long keys nested deep", in: strings.ReplaceAll(strings.TrimSuffix(nestedBlock(100), strings.Repeat(" ", 100)+"v\n"), "k:", strings.Repeat("k", 1_000)+":") + strings.Repeat(" ", 100) + flowSeq(1_000) + "\n", rule: ruleTooMuch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Convert([]byte(tc.in))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			checkRefused(t, convertCase{in: "(limit test)", rule: tc.rule, path: tc.path, line: tc.line}, got, err)
		})
	}
}

// TestParserPanicRecovered checks that a panic in goccy's parser becomes an
// error. No input is known to make goccy v1.19.2 panic, so the parser is
// replaced by one that does.
func TestParserPanicRecovered(t *testing.T) {
	saved := goccyParse
	t.Cleanup(func() { goccyParse = saved })
	goccyParse = func(token.Tokens, parser.Mode, ...parser.Option) (*ast.File, error) {
		panic("boom")
	}
	_, err := Convert([]byte("a: 1\n"))
	var e *Error
	if !errors.As(err, &e) || e.Rule != ruleParserFail {
		t.Fatalf("got %v, want rule %q", err, ruleParserFail)
	}
}

// TestDroppedContent checks the guard against a tree that lacks a token the
// lexer produced. No input is known to make goccy v1.19.2 do that once the
// input ends with a line break, so the tree is parsed from fewer tokens.
func TestDroppedContent(t *testing.T) {
	saved := goccyParse
	t.Cleanup(func() { goccyParse = saved })
	goccyParse = func(tokens token.Tokens, mode parser.Mode, opts ...parser.Option) (*ast.File, error) {
		return saved(tokens[:3], mode, opts...) // a: 1, without b: 2
	}
	_, err := Convert([]byte("a: 1\nb: 2\n"))
	var e *Error
	if !errors.As(err, &e) || e.Rule != ruleDropped || e.Line != 2 {
		t.Fatalf("got %v, want rule %q on line 2", err, ruleDropped)
	}
}

// BenchmarkConvert measures a realistic manifest and hostile inputs at the
// limits, which must stay cheap: the limits exist to bound these.
func BenchmarkConvert(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"manifest", manifestYAML},
		{"max size plain scalar", "a: " + strings.Repeat("x", MaxInputBytes-4) + "\n"},
		{"max nodes flow sequence", flowSeq(MaxNodes - 1)},
		{"scan-refused flow sequence", flowSeq(MaxInputBytes/2 - 1)},
		{"max keys block mapping", blockKeys(MaxMappingKeys, "")},
		{"scan-refused block mapping", blockKeys(scanSlack*MaxMappingKeys+1, "")},
		{"many max-key mappings", strings.Repeat("-\n"+blockKeys(MaxMappingKeys, "  "), MaxInputBytes/(MaxMappingKeys*12))},
		{"long key over many nodes", strings.Repeat("k", 30_000) + ": " + flowSeq(2_000) + "\n"},
		{"deep flow nesting", nestedFlow(MaxInputBytes / 2)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.in)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Convert(data)
			}
		})
	}
}
