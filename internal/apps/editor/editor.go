package editor

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.editor"
	Alias = "editor"
)

// App is the Editor app: one buffer and the folder its files live in. It is safe for
// concurrent use; calls act on the buffer one at a time.
type App struct {
	doc    *manifest.Document
	root   *os.Root
	roots  []string // the root's absolute names, for absolute path params
	escape error    // the os.Root's own error for a path that leaves it
	now    func() time.Time

	sem     chan struct{} // held by the call acting on the buffer and its files
	buf     buffer
	nextGen uint64
	undo    undoStore
}

var (
	_ sdk.Handler = (*App)(nil)
	_ sdk.Undoer  = (*App)(nil)
)

// New returns the app with its manifest (as loaded and signed by the host), editing the files
// under root, a folder that must exist. The buffer starts empty, naming no file. Close
// releases the folder.
func New(doc *manifest.Document, root string) (*App, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("editor: root folder: %w", err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("editor: open the root folder: %w", err)
	}
	a := &App{doc: doc, root: r, roots: []string{abs}, now: time.Now, sem: make(chan struct{}, 1),
		buf: buffer{cursor: Cursor{Line: 1}}}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		a.roots = append(a.roots, real)
	}
	// The os.Root's error for a path that leaves it is not exported; learn it from a path
	// that certainly does, so that such a path is answered as outside, not as a failure.
	if _, err := r.Lstat(".."); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			if _, isErrno := pe.Err.(syscall.Errno); !isErrno {
				a.escape = pe.Err
			}
		}
	}
	return a, nil
}

// Close releases the root folder. Calls after Close fail.
func (a *App) Close() error { return a.root.Close() }

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

// lock waits for the buffer, or for ctx to be done.
func (a *App) lock(ctx context.Context, id string) error {
	select {
	case a.sem <- struct{}{}:
		if ctx.Err() != nil {
			<-a.sem
			return ctxError(ctx, id)
		}
		return nil
	case <-ctx.Done():
		return ctxError(ctx, id)
	}
}

func (a *App) unlock() { <-a.sem }

func ctxError(ctx context.Context, id string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sdk.Timeout(id, 0)
	}
	return sdk.ExecutionFailed("the call was cancelled", true)
}

// fresh returns a generation no state of the buffer has had.
func (a *App) fresh() uint64 {
	a.nextGen++
	return a.nextGen
}

// view is the buffer as a call answers it. Content is nil when the answer leaves it out.
type view struct {
	Status     string  `json:"status,omitempty"`
	Filename   string  `json:"filename"`
	Path       string  `json:"path"`
	Content    *string `json:"content,omitempty"`
	Size       int     `json:"size"`
	Modified   bool    `json:"modified"`
	LineCount  int     `json:"line_count"`
	CursorLine int     `json:"cursor_line"`
	CursorCol  int     `json:"cursor_col"`
	Cursor     Cursor  `json:"cursor"`
}

func (a *App) view(withContent bool) view {
	v := view{
		Size: len(a.buf.content), Modified: a.buf.modified, LineCount: lineCount(a.buf.content),
		CursorLine: a.buf.cursor.Line, CursorCol: a.buf.cursor.Column, Cursor: a.buf.cursor,
	}
	if a.buf.rel != "" {
		v.Filename = filepath.Base(a.buf.rel)
		v.Path = a.abs(a.buf.rel)
	}
	if withContent {
		c := a.buf.content
		v.Content = &c
	}
	return v
}

// abs is the absolute name of rel under the root, as the gateway's path constraints see it.
func (a *App) abs(rel string) string { return filepath.Join(a.roots[0], rel) }

func result(data any, undo string) (sdk.Result, error) {
	enc, err := json.Marshal(data)
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the answer could not be encoded", false)
	}
	return sdk.Result{Success: true, Data: enc, UndoToken: undo}, nil
}

// Invoke implements sdk.Handler.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var allowed []string
	switch id {
	case OpenID:
		allowed = []string{"path"}
	case GetID:
	case SetID:
		allowed = []string{"content", "cursor"}
	case SaveID:
		allowed = []string{"path"}
	default:
		return sdk.Result{}, sdk.NotFound(id)
	}
	p, err := decodeParams(raw, allowed...)
	if err != nil {
		return sdk.Result{}, err
	}
	if err := a.lock(ctx, id); err != nil {
		return sdk.Result{}, err
	}
	defer a.unlock()
	switch id {
	case OpenID:
		return a.openFile(p)
	case GetID:
		return result(a.view(true), "")
	case SetID:
		return a.setBuffer(p)
	default:
		return a.saveFile(p)
	}
}

func (a *App) openFile(p params) (sdk.Result, error) {
	if p.Path == nil {
		return sdk.Result{}, badPath("required")
	}
	rel, err := localPath(*p.Path, a.roots)
	if err != nil {
		return sdk.Result{}, err
	}
	data, err := a.readText(rel)
	if err != nil {
		return sdk.Result{}, err
	}
	now := a.now()
	before := a.buf
	a.buf = buffer{rel: rel, content: string(data), cursor: Cursor{Line: 1}, gen: a.fresh()}
	tok := a.undo.put(&undoRecord{capID: OpenID, at: now, before: before, afterGen: a.buf.gen}, now)
	v := a.view(false)
	v.Status = "success"
	return result(v, tok)
}

func (a *App) setBuffer(p params) (sdk.Result, error) {
	if p.Content == nil {
		return sdk.Result{}, problem("content", "required")
	}
	content := *p.Content
	switch {
	case len(content) > MaxFileBytes:
		return sdk.Result{}, problem("content", "longer than 1048576 bytes")
	case strings.IndexByte(content, 0) >= 0:
		return sdk.Result{}, problem("content", "must not contain NUL")
	}
	cursor := clamp(content, a.buf.cursor)
	if p.Cursor != nil {
		if field := validCursor(content, *p.Cursor); field != "" {
			return sdk.Result{}, problem(field, "lies outside the content")
		}
		cursor = *p.Cursor
	}
	now := a.now()
	before := a.buf
	a.buf = buffer{rel: before.rel, content: content, modified: true, cursor: cursor, gen: a.fresh()}
	tok := a.undo.put(&undoRecord{capID: SetID, at: now, before: before, afterGen: a.buf.gen}, now)
	return result(map[string]any{
		"status": "success", "previous_size": len(before.content), "size": len(content),
		"line_count": lineCount(content), "modified": true,
	}, tok)
}

func (a *App) saveFile(p params) (sdk.Result, error) {
	rel := a.buf.rel
	if p.Path != nil {
		var err error
		if rel, err = localPath(*p.Path, a.roots); err != nil {
			return sdk.Result{}, err
		}
	}
	if rel == "" {
		return sdk.Result{}, badPath("required: the buffer has no file yet")
	}
	prev, err := a.before(rel)
	if err != nil {
		return sdk.Result{}, err
	}
	data := []byte(a.buf.content)
	if err := a.writeAtomic(rel, data, prev.mode); err != nil {
		return sdk.Result{}, err
	}
	now := a.now()
	before := a.buf
	a.buf.rel, a.buf.modified, a.buf.gen = rel, false, a.fresh()
	tok := ""
	if prev.kept {
		tok = a.undo.put(&undoRecord{capID: SaveID, at: now, before: before, afterGen: a.buf.gen,
			rel: rel, prev: prev, written: sha256.Sum256(data)}, now)
	}
	return result(map[string]any{
		"status": "success", "path": a.abs(rel), "filename": filepath.Base(rel),
		"size": len(data), "created": !prev.existed,
	}, tok)
}

// Undo implements sdk.Undoer. open_file and set_buffer are undone by putting back the buffer
// they replaced, when the buffer is still as they left it (undo the later change first).
// save_file is undone by putting back the file's previous bytes (or removing a file it
// created), when the file still holds what was saved.
func (a *App) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	switch id {
	case OpenID, SetID, SaveID:
	default:
		return sdk.NotFound(id)
	}
	if err := a.lock(ctx, id); err != nil {
		return err
	}
	defer a.unlock()
	rec, ok := a.undo.get(undoToken, id, a.now())
	if !ok {
		return sdk.ExecutionFailed("nothing to undo: the change is too old, already undone, or from before a restart", false)
	}
	if id != SaveID {
		if a.buf.gen != rec.afterGen {
			return sdk.ExecutionFailed("the buffer changed since: undo the later change first", false)
		}
		a.buf = rec.before
		a.undo.drop(undoToken)
		return nil
	}
	if !a.holds(rec.rel, rec.written) {
		return sdk.ExecutionFailed("the file changed since it was saved: undo refused", false)
	}
	if rec.prev.existed {
		if err := a.writeAtomic(rec.rel, rec.prev.data, rec.prev.mode); err != nil {
			return err
		}
	} else if err := a.root.Remove(rec.rel); err != nil {
		return fsError(err, a.escape, "names no file in the editor's folder")
	}
	switch {
	case a.buf.gen == rec.afterGen:
		a.buf = rec.before // the save changed only the file name and the modified flag
	case a.buf.rel == rec.rel:
		// The buffer changed since the save; it no longer matches the file either way.
		a.buf.modified = !rec.prev.existed || a.buf.content != string(rec.prev.data)
		a.buf.gen = a.fresh()
	}
	a.undo.drop(undoToken)
	return nil
}

// holds reports whether the file at rel is a regular file whose bytes have the digest sum.
func (a *App) holds(rel string, sum [sha256.Size]byte) bool {
	fi, err := a.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	data, _, err := a.readRegular(rel)
	return err == nil && sha256.Sum256(data) == sum
}
