// Package kb is the example knowledge-base provider's handler: search and read over a small
// index of markdown notes shipped in its package, and a reindex that reads them again. It is an
// sdk.Handler like capgate's built-in apps; the program in ./provider serves it with
// provider.Serve, and ./package.sh (or kbtest in Go) packages and signs it.
//
// The handler reaches no network and writes nothing: its files are read from its package
// folder (FindRoot), which capgate installs read-only. Every call reports what it read
// (sdk.ReportEffect); reindex, declared a write because the port's floor says so, replaces only
// the index it holds in memory, and emits its audit.reindex evidence.
package kb

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// The capabilities the handler implements.
const (
	SearchID  = "kb.org.example.kb.search"
	ReadID    = "kb.org.example.kb.read"
	ReindexID = "kb.org.example.kb.reindex"
)

// EvidenceReindex is the evidence record a reindex emits, dry run or not.
const EvidenceReindex = "audit.reindex"

// ManifestFile is the signed manifest at the package's root.
const ManifestFile = "manifest.json"

// Handler is the knowledge base. Safe for concurrent use: the index is replaced whole.
type Handler struct {
	doc  *manifest.Document
	root string
	idx  atomic.Pointer[index]
}

var (
	_ sdk.Handler        = (*Handler)(nil)
	_ sdk.ParamValidator = (*Handler)(nil)
)

// Open opens the package folder root: its signed manifest.json, which the handler reports as
// it is, and its index.
func Open(root string) (*Handler, error) {
	data, err := os.ReadFile(filepath.Join(root, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("kb: %w", err)
	}
	doc, err := manifest.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kb: %s: %w", ManifestFile, err)
	}
	return New(doc, root)
}

// New returns the handler of doc over the index in the package folder root. Every capability doc
// declares must be one the handler implements: a manifest that promises more is refused here,
// before capgate could install a capability that answers nothing.
func New(doc *manifest.Document, root string) (*Handler, error) {
	for i, c := range doc.Manifest().Capabilities {
		switch c.ID {
		case SearchID, ReadID, ReindexID:
		default:
			return nil, fmt.Errorf("kb: %s: capabilities[%d].id: not a capability this program implements", ManifestFile, i)
		}
	}
	idx, err := loadIndex(root)
	if err != nil {
		return nil, err
	}
	h := &Handler{doc: doc, root: root}
	h.idx.Store(idx)
	return h, nil
}

// Manifest returns the manifest the handler was opened with.
func (h *Handler) Manifest() *manifest.Document { return h.doc }

// FindRoot returns the package folder the program runs in. capgate's convention is that a
// provider runs with its package folder as its working folder: workdir is used when it holds
// a package (a manifest.json and an index folder). Else the folder of program, the path the
// program was started by (os.Args[0]; relative paths are read from workdir), which capgate
// sets to the installed program's path. os.Executable is of no use here: capgate runs a sealed
// in-memory copy of the program, whose path names no folder.
func FindRoot(workdir, program string) (string, error) {
	isPackage := func(dir string) bool {
		m, err := os.Lstat(filepath.Join(dir, ManifestFile))
		if err != nil || !m.Mode().IsRegular() {
			return false
		}
		x, err := os.Lstat(filepath.Join(dir, IndexDir))
		return err == nil && x.IsDir()
	}
	if isPackage(workdir) {
		return workdir, nil
	}
	if program != "" {
		dir := filepath.Dir(program)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(workdir, dir)
		}
		if isPackage(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("kb: neither the working folder nor the program's folder is a package (a %s and an %s folder): %w", ManifestFile, IndexDir, fs.ErrNotExist)
}

// ValidateParams holds the rules the schemas cannot say: a query must hold a word, and at most
// MaxQueryTerms distinct ones; an id must be in a document id's form.
func (h *Handler) ValidateParams(capabilityID string, params json.RawMessage) error {
	var err error
	switch capabilityID {
	case SearchID:
		_, err = searchParams(params)
	case ReadID:
		_, err = readParams(params)
	case ReindexID:
	default:
		return sdk.NotFound(capabilityID)
	}
	return err
}

// Invoke runs one capability. Its params are parsed and checked again whatever the host did
// before: the handler holds its own rules.
func (h *Handler) Invoke(ctx context.Context, capabilityID string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	if h.doc.Manifest().Capability(capabilityID) == nil {
		return sdk.Result{}, sdk.NotFound(capabilityID)
	}
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	switch capabilityID {
	case SearchID:
		terms, err := searchParams(params)
		if err != nil {
			return sdk.Result{}, err
		}
		sdk.ReportEffect(ctx, string(manifest.SideEffectRead), "the knowledge base's index")
		return result(struct {
			Hits []Hit `json:"hits"`
		}{h.idx.Load().search(terms)})
	case ReadID:
		id, err := readParams(params)
		if err != nil {
			return sdk.Result{}, err
		}
		d := h.idx.Load().docs[id]
		if d == nil {
			// not_found is for a capability that does not exist; a document that does not is
			// the call failing, for a reason the agent can act on.
			return sdk.Result{}, sdk.ExecutionFailed("no document of the knowledge base has this id", false)
		}
		sdk.ReportEffect(ctx, string(manifest.SideEffectRead), IndexDir+"/"+id+".md")
		return result(struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}{d.ID, d.Title, d.Text})
	case ReindexID:
		return h.reindex(ctx)
	}
	return sdk.Result{}, sdk.NotFound(capabilityID)
}

// reindex reads the documents again and, unless the call is a dry run, serves them from now
// on. A reindex that fails leaves the index in use as it was.
func (h *Handler) reindex(ctx context.Context) (sdk.Result, error) {
	sdk.ReportEffect(ctx, string(manifest.SideEffectRead), IndexDir)
	idx, err := loadIndex(h.root)
	if err != nil {
		log.Printf("reindex: %v", err) // to capgate's log; the agent is told no path
		return sdk.Result{}, sdk.ExecutionFailed("the documents could not be read again; the index in use is unchanged", true)
	}
	dry := sdk.IsDryRun(ctx)
	if !dry {
		h.idx.Store(idx)
		sdk.ReportEffect(ctx, string(manifest.SideEffectWrite), "the search index in memory")
	}
	ev, err := json.Marshal(struct {
		Documents int  `json:"documents"`
		DryRun    bool `json:"dry_run"`
	}{len(idx.ids), dry})
	if err != nil {
		return sdk.Result{}, err
	}
	sdk.EmitEvidence(ctx, EvidenceReindex, ev)
	return result(struct {
		Documents int `json:"documents"`
	}{len(idx.ids)})
}

func result(v any) (sdk.Result, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return sdk.Result{}, err
	}
	return sdk.Result{Success: true, Data: data}, nil
}

// searchParams returns the distinct terms of a search's query.
func searchParams(params json.RawMessage) ([]string, error) {
	q, err := stringParam(params, "query")
	if err != nil {
		return nil, err
	}
	terms := queryTerms(q)
	switch {
	case len(terms) == 0:
		return nil, invalid("query", "must hold at least one word of letters or digits")
	case len(terms) > MaxQueryTerms:
		return nil, invalid("query", fmt.Sprintf("must hold at most %d distinct words", MaxQueryTerms))
	}
	return terms, nil
}

// readParams returns a read's document id.
func readParams(params json.RawMessage) (string, error) {
	id, err := stringParam(params, "id")
	if err != nil {
		return "", err
	}
	if !ValidID(id) {
		return "", invalid("id", fmt.Sprintf("must be a document id: lowercase letters and digits in words joined by single hyphens, at most %d bytes", MaxIDBytes))
	}
	return id, nil
}

// stringParam returns the string member name of the params object.
func stringParam(params json.RawMessage, name string) (string, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return "", invalid("", "must be a JSON object")
	}
	raw, ok := obj[name]
	if !ok {
		return "", invalid(name, "required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "must be a string")
	}
	return s, nil
}

func invalid(path, rule string) error {
	return sdk.InvalidParams(manifest.Problems{{Path: path, Rule: rule}})
}
