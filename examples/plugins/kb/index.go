package kb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IndexDir is the folder of the package that holds the documents, one file <id>.md each.
const IndexDir = "index"

// idPattern is a document id: words of lowercase ASCII letters and digits joined by single
// hyphens ("plugin-lockfile"). It is the file name without ".md", so that an id can never name
// a path: no slash, no dot, no "..".
var idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidID reports whether id is a document id in form (it may still name no document).
func ValidID(id string) bool { return len(id) <= MaxIDBytes && idPattern.MatchString(id) }

// Document is one note of the index: a markdown file whose first line is "# " and its title.
type Document struct {
	ID    string
	Title string
	Text  string // the rest of the file, trimmed

	counts map[string]int // term → its occurrences in the title and the text
}

// index is the documents, read once and never changed: a reindex builds a new one.
type index struct {
	docs map[string]*Document
	ids  []string // sorted
}

// loadIndex reads the documents of the folder IndexDir of the package folder root. Every entry
// must be a regular file named <id>.md, at most MaxDocumentBytes, valid UTF-8, whose first line
// is a title: anything else is refused, naming the file and the rule, rather than skipped, so
// that a package never serves less than it was built with without saying so. The folder is read
// through an os.Root: nothing outside it is reached, whatever links it holds.
func loadIndex(root string) (*index, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("kb: the package folder: %w", err)
	}
	defer r.Close()
	dir, err := r.OpenRoot(IndexDir)
	if err != nil {
		return nil, fmt.Errorf("kb: %s: %w", IndexDir, err)
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return nil, fmt.Errorf("kb: %s: %w", IndexDir, err)
	}
	entries, err := f.ReadDir(MaxDocuments + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("kb: %s: %w", IndexDir, err)
	}
	if len(entries) > MaxDocuments {
		return nil, fmt.Errorf("kb: %s: more than %d documents", IndexDir, MaxDocuments)
	}
	idx := &index{docs: map[string]*Document{}}
	total := 0
	for _, e := range entries {
		name := e.Name()
		where := IndexDir + "/" + fmt.Sprintf("%q", name)
		id, ok := strings.CutSuffix(name, ".md")
		if !ok || !ValidID(id) {
			return nil, fmt.Errorf("kb: %s: a document's name must be <id>.md, the id lowercase letters and digits in words joined by single hyphens, at most %d bytes", where, MaxIDBytes)
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("kb: %s: must be a regular file (no link, no folder)", where)
		}
		data, err := readDocument(dir, name)
		if err != nil {
			return nil, fmt.Errorf("kb: %s: %w", where, err)
		}
		if total += len(data); total > MaxIndexBytes {
			return nil, fmt.Errorf("kb: %s: the documents hold more than %d bytes", IndexDir, MaxIndexBytes)
		}
		doc, rule := parseDocument(id, data)
		if rule != "" {
			return nil, fmt.Errorf("kb: %s: %s", where, rule)
		}
		idx.docs[id] = doc
		idx.ids = append(idx.ids, id)
	}
	slices.Sort(idx.ids)
	return idx, nil
}

// readDocument reads one document file of dir, at most MaxDocumentBytes.
func readDocument(dir *os.Root, name string) ([]byte, error) {
	f, err := dir.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDocumentBytes)
	}
	return data, nil
}

// parseDocument reads a document's title and text, or says which rule it breaks.
func parseDocument(id string, data []byte) (*Document, string) {
	if !utf8.Valid(data) {
		return nil, "must be UTF-8 text"
	}
	first, rest, _ := strings.Cut(string(data), "\n")
	title, ok := strings.CutPrefix(strings.TrimRight(first, "\r"), "# ")
	title = strings.TrimSpace(title)
	switch {
	case !ok || title == "":
		return nil, `must start with a title line, "# " and the title`
	case len(title) > MaxTitleBytes:
		return nil, fmt.Sprintf("the title is longer than %d bytes", MaxTitleBytes)
	}
	d := &Document{ID: id, Title: title, Text: strings.TrimSpace(rest), counts: map[string]int{}}
	for _, t := range Terms(title + "\n" + d.Text) {
		d.counts[t]++
	}
	return d, ""
}

// Terms splits s into its search terms: its runs of letters and digits, lower-cased. Search
// is case-insensitive because documents and queries are split alike.
func Terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// queryTerms is the distinct terms of a query, in the order they first appear: a term written
// twice does not count twice.
func queryTerms(q string) []string {
	var out []string
	for _, t := range Terms(q) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Hit is one document a search found, and its score: how many times the query's terms occur
// in its title and text.
type Hit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Score int    `json:"score"`
}

// search scores every document by the occurrences of terms and returns those that score,
// best first, ties by id, at most MaxHits.
func (x *index) search(terms []string) []Hit {
	hits := []Hit{}
	for _, id := range x.ids {
		d := x.docs[id]
		score := 0
		for _, t := range terms {
			score += d.counts[t]
		}
		if score > 0 {
			hits = append(hits, Hit{ID: id, Title: d.Title, Score: score})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return b.Score - a.Score }) // ids stay sorted within a score
	if len(hits) > MaxHits {
		hits = hits[:MaxHits]
	}
	return hits
}
