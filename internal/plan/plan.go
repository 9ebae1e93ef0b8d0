// Package plan is what the planner sees: for a task's text, the few capabilities to consider,
// retrieved from their descriptions and examples in English and Turkish, among only those the
// caller may use.
//
// The index is github.com/blevesearch/bleve/v2 in memory, scored with BM25 (bleve's default is
// TF-IDF, so the mapping sets it). Each capability is one document with an English field
// (bleve's English analyzer: stems, stop words) and a Turkish one (its Turkish analyzer); a task
// is matched against both, whatever its language. Search takes the set of capabilities the
// caller may use and restricts the query to it before the best are taken, so a capability
// outside the grant never fills a place, and never appears.
package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en" // the "en" analyzer
	_ "github.com/blevesearch/bleve/v2/analysis/lang/tr" // the "tr" analyzer
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Limits of planning, in one place.
const (
	// DefaultCandidates is how many candidates a task gets when the caller names no number.
	DefaultCandidates = 5
	// MaxCandidates bounds the candidates of one task.
	MaxCandidates = 50
	// MaxTaskBytes bounds a task's text.
	MaxTaskBytes = 4096
)

// scoringModel is BM25; a test sets TF-IDF to see that the model is honoured.
var scoringModel = index.BM25Scoring

// Doc is one capability as the index reads it: its id and its text in each language.
type Doc struct {
	ID string
	// Names are what the capability is called: its app and method in words, its name. They
	// weigh NameBoost times the rest.
	Names   []string
	English []string // the capability's description, its definition's English description and examples
	Turkish []string // its definition's Turkish description and examples
}

// NameBoost is how much more a match in a capability's names weighs than one in its
// descriptions and examples.
const NameBoost = 2.0

// Hit is one candidate: a capability id and its BM25 score.
type Hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// Index is the retrieval index of a set of capabilities. It is safe for concurrent use.
type Index struct {
	idx bleve.Index
	n   int
}

type document struct {
	Name string `json:"name"`
	En   string `json:"en"`
	Tr   string `json:"tr"`
}

// Build indexes docs in memory.
func Build(docs []Doc) (*Index, error) {
	m := bleve.NewIndexMapping()
	m.ScoringModel = scoringModel
	dm := bleve.NewDocumentMapping()
	dm.AddFieldMappingsAt("name", textField("en"))
	dm.AddFieldMappingsAt("en", textField("en"))
	dm.AddFieldMappingsAt("tr", textField("tr"))
	m.DefaultMapping = dm
	// Scorch, in memory (no path): bleve's BM25 needs its field statistics, which the
	// upsidedown index of bleve.NewMemOnly lacks (it would score TF-IDF without a word).
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("plan: index: %w", err)
	}
	b := idx.NewBatch()
	seen := map[string]bool{}
	for _, d := range docs {
		if d.ID == "" || seen[d.ID] {
			continue
		}
		seen[d.ID] = true
		if err := b.Index(d.ID, document{Name: strings.Join(d.Names, "\n"), En: strings.Join(d.English, "\n"), Tr: strings.Join(d.Turkish, "\n")}); err != nil {
			idx.Close()
			return nil, fmt.Errorf("plan: index %s: %w", d.ID, err)
		}
	}
	if err := idx.Batch(b); err != nil {
		idx.Close()
		return nil, fmt.Errorf("plan: index: %w", err)
	}
	return &Index{idx: idx, n: len(seen)}, nil
}

func textField(analyzer string) *mapping.FieldMapping {
	f := bleve.NewTextFieldMapping()
	f.Analyzer = analyzer
	f.Store = false
	f.IncludeTermVectors = false
	return f
}

// Len is how many capabilities the index holds.
func (x *Index) Len() int { return x.n }

// Close frees the index.
func (x *Index) Close() error { return x.idx.Close() }

// ErrTask is a task that cannot be searched: empty, or longer than MaxTaskBytes.
var ErrTask = errors.New("plan: the task must be 1 to 4096 bytes of text")

// Search returns at most n candidates for task among allowed, the ids the caller may use,
// best first (n <= 0 is DefaultCandidates). The query is restricted to allowed before the best
// are taken. A task that matches nothing has no candidates.
func (x *Index) Search(task string, allowed []string, n int) ([]Hit, error) {
	task = strings.TrimSpace(task)
	if task == "" || len(task) > MaxTaskBytes {
		return nil, ErrTask
	}
	if n <= 0 {
		n = DefaultCandidates
	}
	n = min(n, MaxCandidates)
	if len(allowed) == 0 {
		return []Hit{}, nil
	}
	en := query.NewMatchQuery(task)
	en.SetField("en")
	en.Analyzer = "en"
	tr := query.NewMatchQuery(task)
	tr.SetField("tr")
	tr.Analyzer = "tr"
	name := query.NewMatchQuery(task)
	name.SetField("name")
	name.Analyzer = "en"
	name.SetBoost(NameBoost)
	q := query.NewConjunctionQuery([]query.Query{query.NewDisjunctionQuery([]query.Query{name, en, tr}), query.NewDocIDQuery(allowed)})
	req := bleve.NewSearchRequestOptions(q, n, 0, false)
	res, err := x.idx.Search(req)
	if err != nil {
		return nil, fmt.Errorf("plan: search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hits = append(hits, Hit{ID: h.ID, Score: h.Score})
	}
	return hits, nil
}
