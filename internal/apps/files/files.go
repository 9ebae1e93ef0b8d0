package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// App is the Files app over one root folder. It is safe for concurrent use: reads run in
// parallel, and every change (and every undo) runs alone, so that two writes to one file
// never interleave and an undo record always matches what it undoes.
type App struct {
	doc     *manifest.Document
	root    *os.Root // the folder agents see
	roots   []string // the absolute spellings of the root a path param may start with
	display string   // the spelling of the root in answers
	undo    *os.Root // the undo area, inside the state folder, outside the root

	// sem serializes changes, undo and purge; a channel so that waiting respects the
	// call's context. The fields below are guarded by it.
	sem       chan struct{}
	records   map[string]*record
	undoBytes int64
	limits    undoLimits
}

// undoLimits are the undo area's bounds; the package's tests lower them.
type undoLimits struct {
	fileBytes int64
	bytes     int64
	records   int
}

var (
	_ sdk.Handler = (*App)(nil)
	_ sdk.Undoer  = (*App)(nil)
)

// capabilityIDs are the ids New requires the manifest to declare.
var capabilityIDs = []string{ListDirectoryID, ReadFileID, WriteFileID, DeleteFileID, CreateFileID, CreateDirectoryID}

// New returns the app with its manifest (as loaded and signed by the host), serving the
// folder root and keeping its undo area in stateDir, which is created (mode 0700) if missing.
// stateDir must lie outside root: agents must be able neither to read the bytes kept for
// undo nor to forge an undo record. Undo records left by an earlier run are loaded; damaged
// ones and those past their window are removed. Close releases the folders.
func New(doc *manifest.Document, root, stateDir string) (*App, error) {
	if doc == nil {
		return nil, errors.New("files: nil manifest")
	}
	for _, id := range capabilityIDs {
		if doc.Manifest().Capability(id) == nil {
			return nil, fmt.Errorf("files: the manifest does not declare %s", id)
		}
	}
	if root == "" || stateDir == "" {
		return nil, errors.New("files: the root and state folders must be named")
	}
	absRoot, realRoot, err := resolve(root)
	if err != nil {
		return nil, fmt.Errorf("files: root: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("files: state folder: %w", err)
	}
	absState, realState, err := resolve(stateDir)
	if err != nil {
		return nil, fmt.Errorf("files: state folder: %w", err)
	}
	if within(realRoot, realState) || within(absRoot, absState) {
		return nil, errors.New("files: the state folder must lie outside the root")
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, fmt.Errorf("files: root: %w", err)
	}
	undo, err := openUndoArea(realState)
	if err != nil {
		r.Close()
		return nil, err
	}
	roots := []string{absRoot}
	if realRoot != absRoot {
		roots = append(roots, realRoot)
	}
	a := &App{
		doc: doc, root: r, roots: roots, display: absRoot, undo: undo,
		sem:     make(chan struct{}, 1),
		records: map[string]*record{},
		limits:  undoLimits{fileBytes: MaxUndoFileBytes, bytes: MaxUndoBytes, records: MaxUndoRecords},
	}
	a.load()
	a.Purge(time.Now())
	return a, nil
}

// resolve returns path made absolute, and the same with its links resolved: the root and
// the state folder are compared both ways, so that neither spelling hides one in the other.
func resolve(path string) (abs, resolved string, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", err
	}
	resolved, err = filepath.EvalSymlinks(abs)
	return abs, resolved, err
}

// within reports whether child is parent or lies beneath it; both are absolute and clean.
func within(parent, child string) bool {
	rel, err := filepath.Rel(parent, child)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Close releases the root and the undo area. The app must not be used after.
func (a *App) Close() error {
	return errors.Join(a.root.Close(), a.undo.Close())
}

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

// Invoke implements sdk.Handler. It purges expired undo records first when no change is
// running.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	start := time.Now()
	a.tryPurge(start)
	var (
		res sdk.Result
		err error
	)
	switch id {
	case ListDirectoryID:
		res, err = a.listDirectory(ctx, raw)
	case ReadFileID:
		res, err = a.readFile(ctx, raw)
	case WriteFileID:
		res, err = a.writeFile(ctx, id, raw)
	case DeleteFileID:
		res, err = a.deleteFile(ctx, id, raw)
	case CreateFileID:
		res, err = a.createFile(ctx, id, raw)
	case CreateDirectoryID:
		res, err = a.createDirectory(ctx, id, raw)
	default:
		return sdk.Result{}, sdk.NotFound(id)
	}
	if err != nil {
		return sdk.Result{}, callError(err, id, start)
	}
	return res, nil
}

// callError turns the context's end into the gateway's Timeout; every other error is
// already an *sdk.Error.
func callError(err error, id string, start time.Time) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return sdk.Timeout(id, time.Since(start).Milliseconds())
	case errors.Is(err, context.Canceled):
		return sdk.ExecutionFailed("the call was cancelled", true)
	}
	return err
}

// lock waits for the change lock, or for ctx to end.
func (a *App) lock(ctx context.Context) error {
	select {
	case a.sem <- struct{}{}:
		if err := ctx.Err(); err != nil {
			<-a.sem
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *App) unlock() { <-a.sem }

// show is how a path relative to the root is spelled in answers: absolute, under the root.
func (a *App) show(rel string) string {
	if rel == "." {
		return a.display
	}
	return filepath.Join(a.display, rel)
}

// window is the undo window of capability id, or 0 when it declares none.
func (a *App) window(id string) time.Duration {
	c := a.doc.Manifest().Capability(id)
	if c == nil || c.UndoWindowMS == nil || *c.UndoWindowMS <= 0 {
		return 0
	}
	return time.Duration(*c.UndoWindowMS) * time.Millisecond
}

// params are the members of every method's params; decode checks which a method allows.
type params struct {
	Path     *string     `json:"path"`
	Offset   json.Number `json:"offset"`
	Length   json.Number `json:"length"`
	Content  *string     `json:"content"`
	Mode     string      `json:"mode"`
	Encoding string      `json:"encoding"`
}

// decode reads raw, which should already have passed the capability's schema, as params,
// refusing members the method does not take, and returns the path relative to the root.
// The checks repeat the schema's so that the app is safe even when called directly.
func (a *App) decode(raw json.RawMessage, allowed ...string) (params, string, error) {
	var p params
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if !utf8.Valid(raw) {
		return p, "", badParam("", "params must be valid UTF-8")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return p, "", badParam("", "params must be an object")
	}
	for name := range members {
		ok := name == "path"
		for _, n := range allowed {
			ok = ok || name == n
		}
		if !ok {
			return p, "", badParam("", "params may hold only the capability's members")
		}
	}
	for _, name := range []string{"offset", "length"} {
		if v := bytes.TrimSpace(members[name]); len(v) > 0 && v[0] == '"' {
			return p, "", badParam(name, "must be an integer, not a string")
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return p, "", badParam(te.Field, "has the wrong type")
		}
		return p, "", badParam("", "params must be an object")
	}
	if p.Path == nil {
		return p, "", badParam("path", "is required")
	}
	rel, err := resolvePath(a.roots, *p.Path)
	return p, rel, err
}

// integer reads n, a JSON number the schema took as an integer (so 2.0 and 2e1 too), within
// [min, max]; an absent n is def.
func integer(n json.Number, field string, min, max, def int64) (int64, error) {
	if n == "" {
		return def, nil
	}
	rule := fmt.Sprintf("must be an integer from %d to %d", min, max)
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(n), 64)
		if ferr != nil || f != math.Trunc(f) || f < float64(min) || f > float64(max) {
			return 0, badParam(field, rule)
		}
		v = int64(f)
	}
	if v < min || v > max {
		return 0, badParam(field, rule)
	}
	return v, nil
}

// decodeContent reads content in its encoding ("utf-8", the default, or "base64", standard
// alphabet with padding and nothing else: no line breaks, no non-zero padding bits, so that
// each byte string has one spelling). It refuses more than MaxContentBytes.
func decodeContent(content, encoding string) ([]byte, error) {
	var data []byte
	switch encoding {
	case "", "utf-8":
		if !utf8.ValidString(content) {
			return nil, badParam("content", "must be valid UTF-8")
		}
		data = []byte(content)
	case "base64":
		if len(content) > maxContentChars {
			return nil, badParam("content", fmt.Sprintf("must be at most %d bytes once decoded", MaxContentBytes))
		}
		if strings.ContainsAny(content, "\r\n") {
			return nil, badParam("content", "must be base64 without line breaks")
		}
		var err error
		data, err = base64.StdEncoding.Strict().DecodeString(content)
		if err != nil {
			return nil, badParam("content", "must be standard base64 with padding")
		}
	default:
		return nil, badParam("encoding", "must be utf-8 or base64")
	}
	if len(data) > MaxContentBytes {
		return nil, badParam("content", fmt.Sprintf("must be at most %d bytes once decoded", MaxContentBytes))
	}
	return data, nil
}

// fsError reads an error of the filesystem as the agent's error: a fixed text by kind, never
// the error's own text, which holds the path.
func fsError(err error) error {
	var se *sdk.Error
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case isEscape(err):
		return errOutside()
	case errors.Is(err, fs.ErrNotExist):
		return sdk.ExecutionFailed("nothing exists at the path, or one of its folders is missing", false)
	case errors.Is(err, syscall.ENOTDIR):
		return sdk.ExecutionFailed("a folder along the path is not a folder", false)
	case errors.Is(err, syscall.ENOTEMPTY):
		return sdk.ExecutionFailed("the folder is not empty", false)
	case errors.Is(err, fs.ErrExist):
		return sdk.ExecutionFailed("something already exists at the path", false)
	case errors.Is(err, fs.ErrPermission):
		return sdk.PermissionDenied("the filesystem denies the files app access to the path")
	case errors.Is(err, syscall.ELOOP):
		return sdk.ExecutionFailed("too many symbolic links along the path", false)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return badParam("path", "names a file the filesystem cannot: a name or the path is too long")
	case errors.Is(err, syscall.EISDIR):
		return sdk.ExecutionFailed("the path names a folder", false)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return sdk.ExecutionFailed("the disk is full", true)
	case errors.Is(err, syscall.EROFS):
		return sdk.ExecutionFailed("the filesystem is read-only", false)
	}
	return sdk.ExecutionFailed("the filesystem operation failed", false)
}

// copyCtx copies src to dst in chunks, stopping when ctx ends.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, copyChunk)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			w, werr := dst.Write(buf[:k])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// kindOf names what a mode is, as list_directory and delete_file answer.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}
