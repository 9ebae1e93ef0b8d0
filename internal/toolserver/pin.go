package toolserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/jcs"
)

// Definition is what a tool's pin covers: its name, title, description, input and output
// schemas and annotations, as the server listed them. Annotations have a fixed form of their
// own (every hint member present, null when the server sent none), so that a pin does not
// depend on how an SDK version writes them.
type Definition struct {
	Name         string       `json:"name"`
	Title        string       `json:"title"`
	Description  string       `json:"description"`
	InputSchema  any          `json:"inputSchema"`
	OutputSchema any          `json:"outputSchema"`
	Annotations  *annotations `json:"annotations"`
}

type annotations struct {
	Title       string `json:"title"`
	ReadOnly    bool   `json:"readOnlyHint"`
	Destructive *bool  `json:"destructiveHint"`
	Idempotent  bool   `json:"idempotentHint"`
	OpenWorld   *bool  `json:"openWorldHint"`
}

// DefinitionOf returns the part of t that its pin covers.
func DefinitionOf(t *mcpsdk.Tool) Definition {
	d := Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
	if a := t.Annotations; a != nil {
		d.Annotations = &annotations{Title: a.Title, ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint,
			Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
	}
	return d
}

// Canonical returns the RFC 8785 canonical JSON of d.
func (d Definition) Canonical() ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("toolserver: tool definition: %w", err)
	}
	c, err := jcs.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("toolserver: tool definition: %w", err)
	}
	return c, nil
}

// Hash returns "sha256:" and the hex SHA-256 of canonical, a definition's canonical form.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Listed is one tool as the server lists it now: its definition's canonical form and hash.
type Listed struct {
	Tool      *mcpsdk.Tool
	Canonical []byte
	Hash      string
}

// listed computes the canonical forms and hashes of tools; a tool whose definition cannot be
// canonicalized (numbers JSON cannot hold) is left out and reported.
func listed(tools []*mcpsdk.Tool) (map[string]Listed, []Problem) {
	out := make(map[string]Listed, len(tools))
	var ps []Problem
	for _, t := range tools {
		c, err := DefinitionOf(t).Canonical()
		if err != nil {
			ps = append(ps, Problem{Tool: t.Name, Rule: "its definition is not valid JSON"})
			continue
		}
		if _, dup := out[t.Name]; dup {
			ps = append(ps, Problem{Tool: t.Name, Rule: "the server lists two tools of this name; the later is left out"})
			continue
		}
		out[t.Name] = Listed{Tool: t, Canonical: c, Hash: Hash(c)}
	}
	return out, ps
}

// Pin is an accepted tool: the hash of its definition when it was accepted, the definition
// itself (to show what changed), and the action its capability got. It is stored as JSON.
//
// Evolution: fields may be added with omitempty, never renamed or given a new meaning.
type Pin struct {
	Tool       string          `json:"tool"`
	Action     string          `json:"action"`
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"` // canonical JSON of the Definition
	Accepted   time.Time       `json:"accepted"`
}

// Problem is a tool left out, and why: field paths and rules, never the tool's text.
type Problem struct {
	Tool string
	Rule string
}

func (p Problem) String() string { return strconv.Quote(p.Tool) + ": " + p.Rule }

// actionFor derives a capability action from a tool name: lowercase, every byte outside
// [a-z0-9_] becomes '_', a name that does not start with a letter gets "t_" in front, cut
// to MaxActionBytes; when taken already, "_2", "_3", ... is added.
func actionFor(tool string, taken map[string]bool) string {
	var b strings.Builder
	for i := 0; i < len(tool) && b.Len() < MaxActionBytes; i++ {
		c := tool[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "t_" + base
	}
	if len(base) > MaxActionBytes {
		base = base[:MaxActionBytes]
	}
	act := base
	for n := 2; taken[act]; n++ {
		act = base + "_" + strconv.Itoa(n)
	}
	return act
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
