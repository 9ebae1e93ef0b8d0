package definition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capgate/capgate/internal/yamljson"
	"github.com/capgate/capgate/manifest"
)

// HandlePrefix starts a handle of another assistant or person ("@alice.example"): handles live
// in a namespace of their own, and a handle is never read as a definition name.
const HandlePrefix = "@"

// Choice is what negotiation made of one definition: the version offered, or why it was
// dropped. Client is what the client listed for the name ("" for a definition it did not
// list, reported only when it is an extension dropped with its parent).
type Choice struct {
	Name    string `json:"name"`
	Client  string `json:"client,omitempty"`  // what the client supports, name@major.minor
	Offered string `json:"offered,omitempty"` // the version offered, name@major.minor
	Kept    bool   `json:"kept"`
	Why     string `json:"why"`
}

// Negotiation is the result of Negotiate: the definitions offered, and a Choice for every
// entry the client listed.
type Negotiation struct {
	Offered []*Definition `json:"-"`
	Choices []Choice      `json:"choices"`
}

// Negotiate intersects what a client supports (entries of name@major.minor) with the host's
// definitions: a name both know is offered at the highest version both support (the same
// major, the host's highest minor not above the client's: a minor version only adds); an
// extension whose parent is not offered at a version that satisfies its extends is dropped,
// and so, in turn, are extensions of what is dropped. An entry that is a handle (HandlePrefix),
// or is no definition reference, is dropped and never matched against a name.
func Negotiate(s *Set, supports []string) Negotiation {
	var n Negotiation
	best := map[string]*Definition{} // name → the version offered
	client := map[string]string{}    // name → the client's entry that won
	for _, entry := range supports {
		c := Choice{Client: entry}
		switch ref, err := manifest.ParseDefinitionRef(entry); {
		case strings.HasPrefix(entry, HandlePrefix):
			c.Name, c.Why = entry, "a handle of an assistant, in a namespace of its own: never a definition name"
		case err != nil:
			c.Name, c.Why = entry, "not a definition name and @major.minor"
		default:
			c.Name = ref.Name()
			d := s.highestUpTo(ref.Name(), ref.Version().Major, ref.Version().Minor)
			switch {
			case d == nil && s.knows(ref.Name()):
				c.Why = fmt.Sprintf("no version in common: capgate has %s, none at %d.x up to %s", s.versions(ref.Name()), ref.Version().Major, ref.Version())
			case d == nil:
				c.Why = "capgate has no definition of this name"
			default:
				if prev := best[d.Name]; prev == nil || newer(d.Version, prev.Version) {
					best[d.Name], client[d.Name] = d, entry
				}
				c.Offered, c.Kept = d.Ref(), true
				c.Why = "both support " + d.Ref()
			}
		}
		n.Choices = append(n.Choices, c)
	}
	// A lower major listed beside a higher one loses to it.
	for i, c := range n.Choices {
		if c.Kept && best[c.Name].Ref() != c.Offered {
			n.Choices[i].Kept, n.Choices[i].Why = false, "a higher version in common is offered: "+best[c.Name].Ref()
			n.Choices[i].Offered = ""
		}
	}
	// Extensions go with their parents, until nothing more goes.
	for changed := true; changed; {
		changed = false
		for name, d := range best {
			p := d.Extends
			if p == nil {
				continue
			}
			if parent := best[p.Name()]; parent == nil || parent.Version.Major != p.Version().Major || parent.Version.Minor < p.Version().Minor {
				delete(best, name)
				for i, c := range n.Choices {
					if c.Kept && c.Name == name {
						n.Choices[i].Kept, n.Choices[i].Offered = false, ""
						n.Choices[i].Why = "an extension of " + p.String() + ", which is not in the intersection"
					}
				}
				changed = true
			}
		}
	}
	for _, d := range s.All() {
		if best[d.Name] == d {
			n.Offered = append(n.Offered, d)
		}
	}
	return n
}

// newer reports whether a is a later version than b.
func newer(a, b manifest.MinorVersion) bool {
	return a.Major > b.Major || a.Major == b.Major && a.Minor > b.Minor
}

// highestUpTo is the definition of name at major with the highest minor not above minor.
func (s *Set) highestUpTo(name string, major, minor uint32) *Definition {
	var best *Definition
	for _, d := range s.All() {
		if d.Name == name && d.Version.Major == major && d.Version.Minor <= minor && (best == nil || d.Version.Minor > best.Version.Minor) {
			best = d
		}
	}
	return best
}

func (s *Set) knows(name string) bool {
	return slices.ContainsFunc(s.All(), func(d *Definition) bool { return d.Name == name })
}

// versions lists the host's versions of name, for a reason.
func (s *Set) versions(name string) string {
	var vs []string
	for _, d := range s.All() {
		if d.Name == name {
			vs = append(vs, d.Version.String())
		}
	}
	return strings.Join(vs, ", ")
}

// NewSet makes a set of already checked definitions (tests, and definitions from a plugin's
// ports); a later one of a name and version already held is ignored.
func NewSet(defs ...*Definition) *Set {
	s := &Set{byRef: map[string]*Definition{}}
	for _, d := range defs {
		if _, ok := s.byRef[d.Ref()]; !ok {
			s.byRef[d.Ref()] = d
		}
	}
	return s
}

// MaxSupports bounds the entries a client may list for one negotiation.
const MaxSupports = 1024

// Document is the definition as its file holds it, signature included, in RFC 8785 form: what
// a client that negotiated it receives.
func (d *Definition) Document() json.RawMessage {
	b, err := d.root.AppendCanonical(nil)
	if err != nil {
		return nil // a parsed Value always has a canonical form
	}
	return b
}

// Answer is a negotiation as a client receives it: the offered definitions' documents, and
// why each entry it listed was kept or dropped.
type Answer struct {
	Offered []json.RawMessage `json:"offered"`
	Choices []Choice          `json:"choices"`
}

// Answer returns n as a client receives it.
func (n Negotiation) Answer() Answer {
	a := Answer{Offered: []json.RawMessage{}, Choices: n.Choices}
	if a.Choices == nil {
		a.Choices = []Choice{}
	}
	for _, d := range n.Offered {
		a.Offered = append(a.Offered, d.Document())
	}
	return a
}

// ReadSupports reads what a client supports from a file: a list of "name@major.minor"
// strings, or an object whose supports member is one, in JSON or (for .yaml and .yml) YAML.
// The entries are Negotiate's to judge; the error says what shape was wanted, never the text.
func ReadSupports(path string) ([]string, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	if manifest.IsYAML(path) {
		if data, err = yamljson.Convert(data); err != nil {
			return nil, err
		}
	}
	var list []string
	if err := json.Unmarshal(data, &list); err == nil {
		return list, nil
	}
	var obj struct {
		Supports []string `json:"supports"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.Supports == nil {
		return nil, errors.New(`must be a list of "name@major.minor" strings, or {"supports": [...]}`)
	}
	return obj.Supports, nil
}
