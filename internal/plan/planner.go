package plan

import (
	"strings"
	"sync"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// Planner keeps the retrieval index of every registered capability, built again when the
// registry changes, and answers a task with the candidates among what a caller may use. It is
// safe for concurrent use.
type Planner struct {
	Registry *registry.Registry
	// Definitions add to a capability that implements one of them its descriptions and
	// examples in both languages; nil: none.
	Definitions *definition.Set
	// Policy is the host's rule on providers, which every route follows.
	Policy definition.Policy
	// Preferences keeps the person's preferences between the providers of one definition,
	// made on the approval page (SavePreference), which every route follows while the
	// providers stay the ones it was made among; nil: none is kept, and every route goes by
	// provider id within each path.
	Preferences store.State

	mu      sync.RWMutex // searches hold it to read idx, a rebuild to swap it
	version uint64
	idx     *Index
}

// Candidate is a usable capability retrieved for a task, with its score.
type Candidate struct {
	broker.Usable
	Score float64
}

// Candidates returns at most n of usable (broker.UsableBy: what the caller may use, enabled
// and pinned) for task, best first; n <= 0 is DefaultCandidates.
func (p *Planner) Candidates(task string, usable []broker.Usable, n int) ([]Candidate, error) {
	if err := p.refresh(); err != nil {
		return nil, err
	}
	allowed := make([]string, len(usable))
	byID := make(map[string]broker.Usable, len(usable))
	for i, u := range usable {
		allowed[i] = u.ID.String()
		byID[allowed[i]] = u
	}
	p.mu.RLock()
	hits, err := p.idx.Search(task, allowed, n)
	p.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(hits))
	for _, h := range hits {
		if u, ok := byID[h.ID]; ok {
			out = append(out, Candidate{Usable: u, Score: h.Score})
		}
	}
	return out, nil
}

// refresh builds the index again when the registry moved since it was built; the old one
// is closed once no search reads it.
func (p *Planner) refresh() error {
	v := p.Registry.Version()
	p.mu.RLock()
	fresh := p.idx != nil && p.version == v
	p.mu.RUnlock()
	if fresh {
		return nil
	}
	var docs []Doc
	for _, app := range p.Registry.List() {
		if app.Doc == nil {
			continue
		}
		m := app.Doc.Manifest()
		for i := range m.Capabilities {
			docs = append(docs, p.doc(app.Alias, &m.Capabilities[i]))
		}
	}
	idx, err := Build(docs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx != nil && p.version >= v {
		idx.Close() // another search built it first
		return nil
	}
	if p.idx != nil {
		p.idx.Close()
	}
	p.idx, p.version = idx, v
	return nil
}

// Close frees the index.
func (p *Planner) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx == nil {
		return nil
	}
	err := p.idx.Close()
	p.idx = nil
	return err
}

// doc is a capability's text: its app's alias and its method in words, its name and
// description (the app's words) and, when it implements a loaded definition, the definition's
// descriptions and examples.
func (p *Planner) doc(alias string, c *manifest.Capability) Doc {
	method := c.ID[strings.LastIndexByte(c.ID, '.')+1:]
	d := Doc{ID: c.ID, Names: []string{alias + " " + strings.ReplaceAll(method, "_", " "), c.Name}, English: []string{c.Description}}
	if c.Implements == "" || p.Definitions == nil {
		return d
	}
	ref, err := manifest.ParseDefinitionRef(c.Implements)
	if err != nil {
		return d
	}
	def := p.Definitions.Find(ref.Name(), ref.Version().Major, ref.Version().Minor)
	if def == nil {
		return d
	}
	d.English = append(d.English, def.Description["en"])
	d.Turkish = append(d.Turkish, def.Description["tr"])
	for _, e := range def.Examples {
		if e.Lang == "tr" {
			d.Turkish = append(d.Turkish, e.Text)
		} else {
			d.English = append(d.English, e.Text)
		}
	}
	return d
}
