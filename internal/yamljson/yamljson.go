// Package yamljson decodes YAML, the authoring form of capgate's files, strictly
// into the JSON text of the same document: manifests (read as YAML only by
// capgate manifest lint, diff and sign, which write the JSON that verify,
// app register and plugin install take), the configuration file and port
// descriptors.
//
// What an author signs is the JSON this package wrote, so the YAML must yield
// one JSON document exactly, with no reading left to chance: a duplicate key
// is refused rather than one value kept, a number keeps its digits, a tag is
// honoured or refused, never dropped. Convert therefore accepts the
// JSON-compatible part of YAML 1.2 and refuses, with an *Error naming the
// position, the document path and the rule, everything else:
//
//   - exactly one document; directives (%YAML, %TAG) are refused;
//   - mappings become objects with members in document order; keys must be
//     strings, unique, and not the YAML 1.1 merge key <<; explicit keys (?)
//     are refused;
//   - sequences, flow or block, become arrays;
//   - plain scalars resolve by the YAML 1.2 core schema (see resolvePlain):
//     null, ~ and empty are null, true and false (three spellings each) are
//     booleans, yes/no/on/off are strings; integers, including 0x and 0o
//     forms, and floats become JSON numbers written from their text, never
//     through float64, so no digit is lost; .inf and .nan in any spelling
//     are refused, as are forms other YAML readers take for numbers but YAML
//     1.2 does not (1_000, 0b101, 012);
//   - quoted and block scalars become strings; all text must be valid UTF-8;
//   - the tags !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are
//     honoured when they fit the node (!!str 123 is "123"); any other tag is
//     refused;
//   - anchors and aliases are refused, so no document can expand (the
//     "billion laughs"); manifests have no use for them;
//   - comments are ignored.
//
// Sizes are bounded (limits.go). The result is compact JSON; numbers keep
// their precision, which the JSON layer then checks against its own rules.
//
// Parsing is done by github.com/goccy/go-yaml's parser and ast packages. This
// package walks goccy's syntax tree itself rather than decoding into Go
// values, which would round numbers, and guards against the places where
// goccy v1.19.2 is lenient or loses content: it re-checks quoted scalars
// against the input (quoted.go), checks that every token reached the tree,
// and bounds goccy's costly shapes before parsing (prescan.go).
package yamljson

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Convert returns the JSON text of the single YAML document in data. Every
// error it returns is an *Error. It never panics, whatever data holds, and
// data is not retained.
func Convert(data []byte) ([]byte, error) {
	src, ierr := checkInput(data)
	if ierr != nil {
		return nil, ierr
	}
	file, content, perr := parse(src)
	if perr != nil {
		return nil, perr
	}
	c := converter{out: make([]byte, 0, len(src)), seen: make(map[*token.Token]struct{}, len(content))}
	if err := c.file(file, src); err != nil {
		return nil, err
	}
	if err := c.checkAllSeen(content); err != nil {
		return nil, err
	}
	return c.out, nil
}

// parse tokenizes and parses src with goccy, after prescan has checked the
// token stream. goccy's lexer and parser have panicked on odd input in past
// releases and the input is untrusted, so a panic in either becomes an
// error rather than a crash.
func parse(src string) (file *ast.File, content []*token.Token, err *Error) {
	defer func() {
		if r := recover(); r != nil {
			file, content, err = nil, nil, &Error{Rule: ruleParserFail}
		}
	}()
	tokens := lexer.Tokenize(src)
	if tk := tokens.InvalidToken(); tk != nil {
		return nil, nil, tokenError(tk, ruleSyntax)
	}
	if src != "" && !strings.HasSuffix(src, "\n") {
		// goccy's lexer drops a tag that ends the input (a: !foo reads as
		// a: null); the same text with a final line break keeps it. A final
		// line break cannot simply be added, as it would change a block
		// scalar that ends the input, so the two are compared instead.
		if countContent(lexer.Tokenize(src+"\n")) != countContent(tokens) {
			return nil, nil, &Error{Line: strings.Count(src, "\n") + 1, Column: 1, Rule: ruleFinalBreak}
		}
	}
	content, err = prescan(tokens)
	if err != nil {
		return nil, nil, err
	}
	// Duplicate keys are allowed here and checked by the walk, which can
	// name the path; goccy's own check compares YAMLPath strings, which
	// confuses some distinct keys (a'.'b at the root and 'a' then 'b').
	f, perr := goccyParse(tokens, 0, parser.AllowDuplicateMapKey())
	if perr != nil {
		// goccy's message may quote the document, so only its position is
		// kept.
		var withToken interface{ GetToken() *token.Token }
		if errors.As(perr, &withToken) && withToken.GetToken() != nil && withToken.GetToken().Position != nil {
			return nil, nil, tokenError(withToken.GetToken(), ruleSyntax)
		}
		return nil, nil, &Error{Rule: ruleSyntax}
	}
	return f, content, nil
}

// goccyParse is goccy's parser.Parse, held in a variable so that a test can
// make it panic: no input is known to make v1.19.2 panic, but the recovery
// in parse must work when one is found.
var goccyParse = parser.Parse

// countContent counts the tokens that carry content.
func countContent(tokens token.Tokens) int {
	n := 0
	for _, tk := range tokens {
		if isContentToken(tk.Type) {
			n++
		}
	}
	return n
}

// converter walks goccy's tree and appends JSON to out.
type converter struct {
	out        []byte
	src        []rune // the input, for checking quoted scalars
	lineStarts []int  // index in src of the start of each line
	quoteEnd   int    // index in src after the last quoted scalar checked
	path       []pathSeg
	depth      int
	nodes      int
	// seen holds the content tokens the walk visited.
	seen map[*token.Token]struct{}
}

// checkAllSeen refuses the document if a token that carries content did
// not reach the tree. goccy's parser (v1.19.2) drops some silently: a tag
// with no value at the end of the input vanishes, so a: !!str reads as
// null instead of "" and a: !!int as null instead of an error.
func (c *converter) checkAllSeen(content []*token.Token) *Error {
	for _, tk := range content {
		if _, ok := c.seen[tk]; !ok {
			return tokenError(tk, ruleDropped)
		}
	}
	return nil
}

// see records that the walk reached content token tk.
func (c *converter) see(tk *token.Token) {
	if tk != nil {
		c.seen[tk] = struct{}{}
	}
}

// file converts the one document of f, whose text is src.
func (c *converter) file(f *ast.File, src string) *Error {
	var body ast.Node
	docs := 0
	for _, doc := range f.Docs {
		if doc == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.DirectiveNode); ok {
			return c.errAt(doc.Body, ruleDirective)
		}
		docs++
		if docs > 1 {
			if doc.Start != nil {
				return c.errTok(doc.Start, ruleMultiDoc)
			}
			return c.errAt(doc.Body, ruleMultiDoc)
		}
		body = doc.Body
	}
	if isNil(body) {
		return &Error{Rule: ruleEmptyDoc}
	}
	c.src = []rune(src)
	c.lineStarts = []int{0}
	for i, r := range c.src {
		if r == '\n' {
			c.lineStarts = append(c.lineStarts, i+1)
		}
	}
	return c.value(body)
}

// value appends the JSON for node n, whose path is c.path.
func (c *converter) value(n ast.Node) *Error {
	if isNil(n) {
		return c.errAt(n, ruleUnsupported)
	}
	c.nodes++
	if c.nodes > MaxNodes {
		return c.errAt(n, ruleTooMany)
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		return c.mapping(n, n.Values)
	case *ast.MappingValueNode:
		// goccy gives a single pair in a flow sequence, [a: 1], this way.
		return c.mapping(n, []*ast.MappingValueNode{n})
	case *ast.SequenceNode:
		return c.sequence(n)
	case *ast.TagNode:
		return c.tagged(n)
	}
	return c.emit(c.scalar(n))
}

// emit appends the JSON for the scalar s, or returns err, the refusal that resolving it met.
func (c *converter) emit(s scalar, err *Error) *Error {
	if err != nil {
		return err
	}
	if s.kind == kindString {
		c.out = appendJSONString(c.out, s.text)
	} else {
		c.out = append(c.out, s.text...)
	}
	return nil
}

// mapping appends the JSON object for mapping n, whose pairs goccy gives
// either as a MappingNode's values or as a lone MappingValueNode.
func (c *converter) mapping(n ast.Node, pairs []*ast.MappingValueNode) *Error {
	if err := c.enter(n); err != nil {
		return err
	}
	c.see(n.GetToken())
	c.out = append(c.out, '{')
	seen := make(map[string]struct{}, len(pairs))
	for i, pair := range pairs {
		if pair == nil {
			return c.errAt(n, ruleUnsupported)
		}
		if i >= MaxMappingKeys {
			return c.errAt(pair.Key, ruleManyKeys)
		}
		key, err := c.key(pair.Key)
		if err != nil {
			return err
		}
		if _, dup := seen[key]; dup {
			return c.errAt(pair.Key, ruleDuplicateKey)
		}
		seen[key] = struct{}{}
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = appendJSONString(c.out, key)
		c.out = append(c.out, ':')
		c.path = append(c.path, pathSeg{key: key, isKey: true})
		if err := c.value(pair.Value); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
	}
	c.out = append(c.out, '}')
	c.depth--
	return nil
}

// key resolves a mapping key, which must be a string. Errors about a key
// carry the path of the mapping, not the key.
func (c *converter) key(k ast.MapKeyNode) (string, *Error) {
	if isNil(k) {
		return "", &Error{Path: renderPath(c.path), Rule: ruleKeyNotString}
	}
	c.nodes++
	if c.nodes > MaxNodes {
		return "", c.errAt(k, ruleTooMany)
	}
	switch k.(type) {
	case *ast.MappingKeyNode:
		return "", c.errAt(k, ruleExplicitKey)
	case *ast.MergeKeyNode:
		return "", c.errAt(k, ruleMergeKey)
	}
	var s scalar
	var err *Error
	if t, ok := k.(*ast.TagNode); ok {
		s, err = c.taggedScalar(t)
	} else {
		s, err = c.scalar(k)
	}
	if err != nil {
		return "", err
	}
	if s.kind != kindString {
		return "", c.errAt(k, ruleKeyNotString)
	}
	return s.text, nil
}

// sequence appends the JSON array for sequence n.
func (c *converter) sequence(n *ast.SequenceNode) *Error {
	if err := c.enter(n); err != nil {
		return err
	}
	c.see(n.Start)
	c.out = append(c.out, '[')
	for i, v := range n.Values {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.path = append(c.path, pathSeg{index: i})
		if err := c.value(v); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
	}
	c.out = append(c.out, ']')
	c.depth--
	return nil
}

// enter counts one more level of nesting for the collection n.
func (c *converter) enter(n ast.Node) *Error {
	c.depth++
	if c.depth > MaxDepth {
		return c.errAt(n, ruleTooDeep)
	}
	return nil
}

// The core-schema tags Convert honours; any other tag is refused.
const (
	tagStr   = "!!str"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagBool  = "!!bool"
	tagNull  = "!!null"
	tagMap   = "!!map"
	tagSeq   = "!!seq"
)

// tagged appends the JSON for a tagged node. A collection tag must sit on a
// collection of its kind, a scalar tag on a scalar (see taggedScalar).
func (c *converter) tagged(t *ast.TagNode) *Error {
	if t.Start == nil {
		return c.errAt(t, ruleUnsupported)
	}
	c.see(t.Start)
	switch t.Start.Value {
	case tagMap:
		switch v := t.Value.(type) {
		case *ast.MappingNode:
			if v != nil {
				return c.mapping(v, v.Values)
			}
		case *ast.MappingValueNode:
			if v != nil {
				return c.mapping(v, []*ast.MappingValueNode{v})
			}
		}
		return c.errAt(t, ruleTagMismatch)
	case tagSeq:
		if v, ok := t.Value.(*ast.SequenceNode); ok && v != nil {
			return c.sequence(v)
		}
		return c.errAt(t, ruleTagMismatch)
	}
	return c.emit(c.taggedScalar(t))
}

// taggedScalar resolves a scalar under one of the scalar tags. !!str takes
// the text of any scalar as a string. !!int, !!float, !!bool and !!null
// apply the core schema's rule for that type to a plain scalar and refuse a
// value that does not match (!!int 1.5) or is quoted (!!int "1"), which YAML
// allows but no manifest needs. An empty value is "" under !!str, null under
// !!null, and refused otherwise.
func (c *converter) taggedScalar(t *ast.TagNode) (scalar, *Error) {
	if t.Start == nil || isNil(t.Value) {
		return scalar{}, c.errAt(t, ruleUnsupported)
	}
	c.see(t.Start)
	tag := t.Start.Value
	switch tag {
	case tagStr, tagInt, tagFloat, tagBool, tagNull:
	case tagMap, tagSeq:
		return scalar{}, c.errAt(t, ruleTagMismatch)
	default:
		return scalar{}, c.errAt(t, ruleTag)
	}
	text, plainType, isPlain, err := c.scalarText(t.Value)
	if err != nil {
		return scalar{}, err
	}
	if isPlain && isEmptyUnder(t, t.Value) {
		text, plainType = "", token.ImplicitNullType
	}
	if tag == tagStr {
		return scalar{kind: kindString, text: text}, nil
	}
	if !isPlain {
		return scalar{}, c.errAt(t, ruleTagMismatch)
	}
	s, rule := resolvePlain(text, plainType)
	if rule != "" {
		return scalar{}, c.errAt(t.Value, rule)
	}
	switch {
	case tag == tagInt && s.kind == kindNumber && isIntText(text),
		tag == tagFloat && s.kind == kindNumber && isFloatText(text),
		tag == tagBool && s.kind == kindBool,
		tag == tagNull && s.kind == kindNull:
		return s, nil
	}
	return scalar{}, c.errAt(t, ruleTagMismatch)
}

// isEmptyUnder reports whether v, the plain scalar under tag t, stands for
// an empty value: goccy gives an implicit null for a tag with nothing after
// it, and for a tag followed by "," or ":" it invents a default ("0" for
// !!int, "false" for !!bool) at the tag's own offset.
func isEmptyUnder(t *ast.TagNode, v ast.Node) bool {
	tk := v.GetToken()
	if tk == nil || tk.Type == token.ImplicitNullType {
		return true
	}
	return tk.Position != nil && t.Start.Position != nil &&
		tk.Position.Offset <= t.Start.Position.Offset
}

// isIntText reports whether text, already resolved as a number, has an
// integer form: !!int 1.0 is refused.
func isIntText(text string) bool {
	_, rest := splitSign(text)
	return rest != "" && (allDigits(rest) || len(text) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'o'))
}

// isFloatText reports whether text, already resolved as a number, is in the
// core schema's float form, which includes plain decimals (!!float 1) but
// not 0x or 0o forms.
func isFloatText(text string) bool {
	_, _, ok := coreFloat(text)
	return ok
}

// scalar resolves an untagged scalar node.
func (c *converter) scalar(n ast.Node) (scalar, *Error) {
	switch n.(type) {
	case *ast.AnchorNode:
		return scalar{}, c.errAt(n, ruleAnchor)
	case *ast.AliasNode:
		return scalar{}, c.errAt(n, ruleAlias)
	case *ast.MergeKeyNode:
		return scalar{}, c.errAt(n, ruleMergeKey)
	case *ast.DirectiveNode:
		return scalar{}, c.errAt(n, ruleDirective)
	}
	text, plainType, isPlain, err := c.scalarText(n)
	if err != nil {
		return scalar{}, err
	}
	if !isPlain {
		return scalar{kind: kindString, text: text}, nil
	}
	s, rule := resolvePlain(text, plainType)
	if rule != "" {
		return scalar{}, c.errAt(n, rule)
	}
	return s, nil
}

// scalarText returns the text of a scalar node: for a plain scalar its
// source text and goccy's classification of it, for a quoted or block
// scalar its string value. Anything else is refused.
func (c *converter) scalarText(n ast.Node) (text string, plainType token.Type, isPlain bool, err *Error) {
	if isNil(n) {
		return "", 0, false, c.errAt(n, ruleUnsupported)
	}
	switch n := n.(type) {
	case *ast.StringNode:
		if n.Token == nil {
			return "", 0, false, c.errAt(n, ruleUnsupported)
		}
		c.see(n.Token)
		switch n.Token.Type {
		case token.SingleQuoteType, token.DoubleQuoteType:
			s, err := c.quoted(n.Token)
			return s, 0, false, err
		}
		return n.Token.Value, n.Token.Type, true, nil
	case *ast.LiteralNode:
		if n.Value == nil {
			return "", 0, false, c.errAt(n, ruleUnsupported)
		}
		c.see(n.Start)
		c.see(n.Value.Token)
		if !utf8Valid(n.Value.Value) {
			return "", 0, false, c.errAt(n, ruleStringUTF8)
		}
		return n.Value.Value, 0, false, nil
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode,
		*ast.InfinityNode, *ast.NanNode:
		tk := n.GetToken()
		if tk == nil {
			return "", 0, false, c.errAt(n, ruleUnsupported)
		}
		c.see(tk)
		if tk.Type == token.ImplicitNullType {
			return "", tk.Type, true, nil
		}
		return tk.Value, tk.Type, true, nil
	case *ast.AnchorNode:
		return "", 0, false, c.errAt(n, ruleAnchor)
	case *ast.AliasNode:
		return "", 0, false, c.errAt(n, ruleAlias)
	case *ast.MergeKeyNode:
		return "", 0, false, c.errAt(n, ruleMergeKey)
	case *ast.TagNode:
		// A second tag on one node.
		return "", 0, false, c.errAt(n, ruleTagMismatch)
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode:
		return "", 0, false, c.errAt(n, ruleTagMismatch)
	}
	return "", 0, false, c.errAt(n, ruleUnsupported)
}

// quoted checks the quoted scalar of token tk against the input and returns
// its value (see quoted.go). The scalar starts on the token's line, after
// the previous quoted scalar; goccy's line numbers are right, its columns
// and offsets are not always.
func (c *converter) quoted(tk *token.Token) (string, *Error) {
	if tk.Position == nil || tk.Position.Line < 1 || tk.Position.Line > len(c.lineStarts) {
		return "", c.errTok(tk, ruleQuotePos)
	}
	open := '"'
	if tk.Type == token.SingleQuoteType {
		open = '\''
	}
	from := max(c.lineStarts[tk.Position.Line-1], c.quoteEnd)
	tries := 0
	for i := from; i < len(c.src) && c.src[i] != '\n' && tries < maxQuoteCandidates; i++ {
		if c.src[i] != open {
			continue
		}
		tries++
		end, m, rule, at := matchQuoted(c.src, i, tk.Value)
		switch m {
		case quoteSame:
			c.quoteEnd = end
			return tk.Value, nil
		case quoteRejected:
			line, col := c.runePos(at)
			return "", &Error{Line: line, Column: col, Path: renderPath(c.path), Rule: rule}
		}
	}
	return "", c.errTok(tk, ruleQuoteDiffers)
}

// runePos returns the line and column of c.src[at].
func (c *converter) runePos(at int) (line, col int) {
	line = sort.Search(len(c.lineStarts), func(i int) bool { return c.lineStarts[i] > at })
	return line, at - c.lineStarts[line-1] + 1
}

// errAt returns an Error for rule at node n and the current path.
func (c *converter) errAt(n ast.Node, rule string) *Error {
	e := &Error{Path: renderPath(c.path), Rule: rule}
	if tk := startToken(n); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	return e
}

// errTok returns an Error for rule at token tk and the current path.
func (c *converter) errTok(tk *token.Token, rule string) *Error {
	e := &Error{Path: renderPath(c.path), Rule: rule}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	return e
}

// startToken returns the token where node n starts in the text: goccy's
// GetToken gives the ":" of a block mapping, so its first key is used.
func startToken(n ast.Node) *token.Token {
	if isNil(n) {
		return nil
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 && n.Values[0] != nil {
			return startToken(n.Values[0])
		}
	case *ast.MappingValueNode:
		if !isNil(n.Key) {
			return startToken(n.Key)
		}
	}
	return n.GetToken()
}

// isNil reports whether n is nil or an interface holding a nil pointer,
// which goccy's tree can contain where a node is missing.
func isNil(n ast.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// utf8Valid reports whether s is valid UTF-8. goccy builds block scalars
// from the checked input, so this holds unless goccy changes; it is cheap
// to check rather than assume.
func utf8Valid(s string) bool { return utf8.ValidString(s) }
