package yamljson

import "github.com/goccy/go-yaml/token"

// prescan estimates the shape of the document from goccy's tokens before
// goccy's parser builds the tree, and refuses documents that would make the
// parser recurse too deeply or do quadratic work (see limits.go). goccy's
// tokenizer is iterative and linear, its parser is not.
//
// The estimate follows YAML's block structure by columns: a key or a "- "
// entry closes every open key or entry at a greater column, and a key closes
// the previous key of the same column, its sibling. Flow collections nest by
// their brackets. This is close to the real nesting for any document goccy
// accepts; where it is off, scanSlack keeps it from refusing a document the
// exact checks would accept. Syntax errors are left to the parser.
//
// It also returns the tokens that carry content, for the walk to check that
// each one reached the tree (see converter.checkAllSeen).
func prescan(tokens token.Tokens) ([]*token.Token, *Error) {
	s := scanner{}
	var content []*token.Token
	for _, tk := range tokens {
		if tk.Type == token.CommentType || tk.Position == nil {
			continue
		}
		if isContentToken(tk.Type) {
			content = append(content, tk)
		}
		if err := s.token(tk); err != nil {
			return nil, err
		}
	}
	return content, nil
}

// frameKind is what opened a level of nesting.
type frameKind int

const (
	frameKey   frameKind = iota // a block mapping key and its value
	frameEntry                  // a block sequence entry (or ? key)
	frameFlow                   // a flow sequence or mapping
)

// frame is one open level of nesting.
type frame struct {
	kind frameKind
	col  int // column of the key or entry; unused for frameFlow
	// pathLen is what this level adds to goccy's YAMLPath for the nodes
	// under it: the key's length plus punctuation, or room for an index.
	pathLen int
	// keys counts this key and the sibling keys before it (frameKey).
	keys int
}

// indexPathLen is what a sequence index adds to a path, "[1234]" and some.
const indexPathLen = 8

// scanner is prescan's state: the open levels of nesting and the running
// estimates.
type scanner struct {
	stack   []frame
	pathLen int // sum of pathLen over stack
	flow    int // open flow collections
	nodes   int
	work    int

	line       int  // line of the previous token
	keyCol     int  // column where a key on this line would start
	afterEntry bool // the previous token on this line was "-" or "?"
	prev       *token.Token
}

// token takes the next token that is not a comment.
func (s *scanner) token(tk *token.Token) *Error {
	defer func() { s.prev = tk }()
	if s.flow == 0 {
		if tk.Position.Line != s.line || s.afterEntry {
			s.keyCol = tk.Position.Column
		}
		s.line = tk.Position.Line
		s.afterEntry = false
	}
	switch tk.Type {
	case token.DocumentHeaderType, token.DocumentEndType:
		s.stack, s.pathLen, s.flow = s.stack[:0], 0, 0
	case token.SequenceStartType, token.MappingStartType:
		if err := s.node(tk); err != nil {
			return err
		}
		if err := s.push(tk, frame{kind: frameFlow, pathLen: indexPathLen}); err != nil {
			return err
		}
		s.flow++
	case token.SequenceEndType, token.MappingEndType:
		for len(s.stack) > 0 {
			if s.pop().kind == frameFlow {
				break
			}
		}
		if s.flow > 0 {
			s.flow--
		}
	case token.CollectEntryType:
		s.setTopPathLen(indexPathLen)
	case token.SequenceEntryType, token.MappingKeyType:
		if s.flow > 0 {
			return nil
		}
		s.afterEntry = true
		col := tk.Position.Column
		for len(s.stack) > 0 {
			top := s.stack[len(s.stack)-1]
			if top.col > col || top.col == col && top.kind == frameEntry {
				s.pop()
				continue
			}
			break
		}
		return s.push(tk, frame{kind: frameEntry, col: col, pathLen: indexPathLen})
	case token.MappingValueType:
		keyLen := 0
		if s.prev != nil && isScalarToken(s.prev.Type) {
			keyLen = len(s.prev.Value)
		}
		if s.flow > 0 {
			s.setTopPathLen(keyLen + 3)
			return nil
		}
		col, keys := s.keyCol, 1
		for len(s.stack) > 0 {
			top := s.stack[len(s.stack)-1]
			if top.col > col || top.col == col && top.kind == frameEntry {
				s.pop()
				continue
			}
			if top.col == col && top.kind == frameKey {
				keys = top.keys + 1
				s.pop()
			}
			break
		}
		if keys > scanSlack*MaxMappingKeys {
			return tokenError(tk, ruleScanKeys)
		}
		// goccy copies the tail of the mapping once per key.
		s.work += 8 * keys
		return s.push(tk, frame{kind: frameKey, col: col, pathLen: keyLen + 3, keys: keys})
	default:
		if isScalarToken(tk.Type) {
			return s.node(tk)
		}
	}
	return nil
}

// node counts a token that becomes a node, and the path goccy builds for it.
func (s *scanner) node(tk *token.Token) *Error {
	s.nodes++
	if s.nodes > scanSlack*MaxNodes {
		return tokenError(tk, ruleScanMany)
	}
	s.work += s.pathLen + len(tk.Value)
	if s.work > maxParseWork {
		return tokenError(tk, ruleTooMuch)
	}
	return nil
}

// push opens a level of nesting at token tk.
func (s *scanner) push(tk *token.Token, f frame) *Error {
	if len(s.stack) >= scanSlack*MaxDepth {
		return tokenError(tk, ruleScanDeep)
	}
	s.stack = append(s.stack, f)
	s.pathLen += f.pathLen
	return nil
}

// pop closes the innermost level of nesting.
func (s *scanner) pop() frame {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.pathLen -= f.pathLen
	return f
}

// setTopPathLen sets what the innermost flow collection adds to the path of
// the nodes that follow: a key's length after "key:", an index after ",".
func (s *scanner) setTopPathLen(n int) {
	if len(s.stack) == 0 || s.stack[len(s.stack)-1].kind != frameFlow {
		return
	}
	top := &s.stack[len(s.stack)-1]
	s.pathLen += n - top.pathLen
	top.pathLen = n
}

// isScalarToken reports whether goccy makes a scalar node from a token of
// type t.
func isScalarToken(t token.Type) bool {
	switch t {
	case token.StringType, token.SingleQuoteType, token.DoubleQuoteType,
		token.IntegerType, token.BinaryIntegerType, token.OctetIntegerType,
		token.HexIntegerType, token.FloatType, token.BoolType, token.NullType,
		token.ImplicitNullType, token.InfinityType, token.NanType,
		token.MergeKeyType:
		return true
	}
	return false
}

// isContentToken reports whether a token of type t stands for part of the
// document's content, which the tree must represent: scalars, node
// properties, block scalar headers and flow collections.
func isContentToken(t token.Type) bool {
	switch t {
	case token.TagType, token.AnchorType, token.AliasType, token.LiteralType,
		token.FoldedType, token.SequenceStartType, token.MappingStartType:
		return true
	}
	return isScalarToken(t) && t != token.ImplicitNullType
}

// tokenError returns an Error for rule at token tk, with no path.
func tokenError(tk *token.Token, rule string) *Error {
	if tk.Position == nil {
		return &Error{Rule: rule}
	}
	return &Error{Line: tk.Position.Line, Column: tk.Position.Column, Rule: rule}
}
