package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/capgate/capgate/sdk"
)

// The undo area is one folder, "undo" inside the state folder, holding for each change made
// within an undo window a record <id>.json and, when the change replaced or removed a file,
// a copy of that file's bytes <id>.data. The id is 128 random bits in lowercase hex and is
// the undo token handed to the gateway: it names the record and cannot be guessed. A record
// is written (data fsynced first, then the record through a temporary name, renamed) before
// the change it undoes is made, so that a crash never leaves a change without its undo; a
// record whose change never happened undoes nothing harmful and ages out with its window.
//
// An os.Root cannot rename across roots, so a file moves between the root and the undo area
// by copy: its bytes are copied into the undo area and fsynced before it is removed through
// the root, and undo writes them back through a temporary file in the target folder. Each
// copy is checked against the SHA-256 recorded with it.

// record is one undoable change. Evolution: new fields must be optional; a record that does
// not decode is removed when the app starts.
type record struct {
	ID         string `json:"id"`
	Capability string `json:"capability"`
	Path       string `json:"path"`      // relative to the root, as resolvePath returns it
	Created    int64  `json:"created"`   // unix nanoseconds
	WindowMS   int64  `json:"window_ms"` // the capability's undo window when the change was made

	// What was at the path before: "" (nothing), "file", "directory" or "symlink".
	Prior string `json:"prior,omitempty"`
	Mode  uint32 `json:"mode,omitempty"` // its permission bits
	Link  string `json:"link,omitempty"` // a symlink's target

	// The copy of a prior file, in <id>.data.
	DataSize   int64  `json:"data_size,omitempty"`
	DataSHA256 string `json:"data_sha256,omitempty"`

	// What create_file wrote, so that undo removes it only when unchanged.
	MadeSize   int64  `json:"made_size,omitempty"`
	MadeSHA256 string `json:"made_sha256,omitempty"`
}

func (r *record) expires() time.Time {
	return time.Unix(0, r.Created).Add(time.Duration(r.WindowMS) * time.Millisecond)
}

func (r *record) hasData() bool { return r.Prior == "file" }

// newID returns 128 random bits in lowercase hex.
func newID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics first)
	return hex.EncodeToString(b[:])
}

// validID reports whether s could be an id newID made: exactly 32 lowercase hex digits, so
// that a token never names a file outside the undo area.
func validID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func errUndoFull() error {
	return sdk.ExecutionFailed("the undo area is full, so the change was refused rather than made without its undo; try again when earlier undo windows end", true)
}

func errTooLarge() error {
	return sdk.ExecutionFailed(fmt.Sprintf("the file is larger than %d bytes, the most the files app keeps to undo a change; it was left unchanged", MaxUndoFileBytes), false)
}

func errChanged() error {
	return sdk.ExecutionFailed("the file changed while the call ran; it was left unchanged", true)
}

// openUndoArea opens (creating) the undo folder inside the state folder.
func openUndoArea(stateDir string) (*os.Root, error) {
	st, err := os.OpenRoot(stateDir)
	if err != nil {
		return nil, fmt.Errorf("files: state folder: %w", err)
	}
	defer st.Close()
	if err := st.Mkdir("undo", 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("files: undo area: %w", err)
	}
	if fi, err := st.Lstat("undo"); err != nil || !fi.IsDir() {
		return nil, errors.New("files: the undo area is not a folder")
	}
	u, err := st.OpenRoot("undo")
	if err != nil {
		return nil, fmt.Errorf("files: undo area: %w", err)
	}
	return u, nil
}

// load reads the records an earlier run left, removing damaged ones and stray files. It runs
// before the app is shared.
func (a *App) load() {
	f, err := a.undo.Open(".")
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	keep := map[string]bool{}
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !validID(id) {
			continue
		}
		rec, err := a.readRecord(id)
		if err != nil {
			continue
		}
		a.records[id] = rec
		a.undoBytes += rec.DataSize
		keep[name] = true
		if rec.hasData() {
			keep[id+".data"] = true
		}
	}
	for _, name := range names {
		if !keep[name] {
			a.undo.Remove(name)
		}
	}
}

// readRecord reads and checks the record id and its copy.
func (a *App) readRecord(id string) (*record, error) {
	f, err := a.undo.Open(id + ".json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil || len(raw) > maxRecordBytes {
		return nil, errors.New("record unreadable")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	var rec record
	if err := d.Decode(&rec); err != nil {
		return nil, err
	}
	rel, err := resolvePath(nil, rec.Path)
	switch {
	case err != nil || rel != rec.Path || rel == ".":
		return nil, errors.New("record path")
	case rec.ID != id || !slices.Contains(capabilityIDs, rec.Capability) || rec.WindowMS <= 0 || rec.DataSize < 0:
		return nil, errors.New("record fields")
	case !slices.Contains([]string{"", "file", "directory", "symlink"}, rec.Prior):
		return nil, errors.New("record prior")
	}
	if rec.hasData() {
		fi, err := a.undo.Lstat(id + ".data")
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != rec.DataSize {
			return nil, errors.New("record data")
		}
	}
	return &rec, nil
}

// begin starts the undo record of a change by capability id to rel (the name base in dir),
// where prior is what is there now (nil for nothing): it keeps a copy of a prior file, or a
// prior link's target. It returns nil when id has no undo window. The record is not yet
// written: commit writes it, discard forgets it. The caller holds the lock.
func (a *App) begin(ctx context.Context, id, rel string, dir *os.Root, base string, prior fs.FileInfo) (*record, error) {
	w := a.window(id)
	if w <= 0 {
		return nil, nil
	}
	if len(a.records) >= a.limits.records {
		return nil, errUndoFull()
	}
	rec := &record{ID: newID(), Capability: id, Path: rel, Created: time.Now().UnixNano(), WindowMS: w.Milliseconds()}
	if prior == nil {
		return rec, nil
	}
	rec.Prior, rec.Mode = kindOf(prior.Mode()), uint32(prior.Mode().Perm())
	switch rec.Prior {
	case "file":
		if prior.Size() > a.limits.fileBytes {
			return nil, errTooLarge()
		}
		if a.undoBytes+prior.Size() > a.limits.bytes {
			return nil, errUndoFull()
		}
		f, err := openSame(dir, base, prior, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := a.saveData(ctx, rec, f); err != nil {
			return nil, err
		}
	case "symlink":
		link, err := dir.Readlink(base)
		if err != nil {
			return nil, fsError(err)
		}
		rec.Link = link
	}
	return rec, nil
}

// openSame opens base in dir, refusing (errChanged) a file that is not the one fi describes:
// a link or another file swapped in since it was examined.
func openSame(dir *os.Root, base string, fi fs.FileInfo, flag int) (*os.File, error) {
	f, err := dir.OpenFile(base, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fsError(err)
	}
	now, err := f.Stat()
	if err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		f.Close()
		return nil, errChanged()
	}
	return f, nil
}

// saveData copies src into rec's data file and fsyncs it.
func (a *App) saveData(ctx context.Context, rec *record, src io.Reader) error {
	name := rec.ID + ".data"
	f, err := a.undo.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return sdk.ExecutionFailed("the undo area cannot be written", true)
	}
	h := sha256.New()
	n, err := copyCtx(ctx, io.MultiWriter(f, h), io.LimitReader(src, a.limits.fileBytes+1))
	err = syncClose(f, err)
	switch {
	case err == nil && n > a.limits.fileBytes:
		err = errTooLarge()
	case err == nil && a.undoBytes+n > a.limits.bytes:
		err = errUndoFull()
	case err != nil && ctx.Err() == nil:
		err = sdk.ExecutionFailed("the undo area cannot be written", true)
	}
	if err != nil {
		a.undo.Remove(name)
		return err
	}
	rec.DataSize, rec.DataSHA256 = n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// commit writes rec (through a temporary name, fsynced and renamed) and adds it to the index.
// A nil rec is nothing to commit.
func (a *App) commit(rec *record) error {
	if rec == nil {
		return nil
	}
	raw, err := json.Marshal(rec)
	if err == nil {
		tmp := rec.ID + ".json.tmp"
		err = a.undo.WriteFile(tmp, raw, 0o600)
		if err == nil {
			err = syncFile(a.undo, tmp)
		}
		if err == nil {
			err = a.undo.Rename(tmp, rec.ID+".json")
		}
		if err != nil {
			a.undo.Remove(tmp)
		}
	}
	if err != nil {
		a.discard(rec)
		return sdk.ExecutionFailed("the undo area cannot be written", true)
	}
	syncDir(a.undo)
	a.records[rec.ID] = rec
	a.undoBytes += rec.DataSize
	return nil
}

// discard removes rec's files and forgets it. A nil rec is nothing to discard.
func (a *App) discard(rec *record) {
	if rec == nil {
		return
	}
	a.undo.Remove(rec.ID + ".json")
	a.undo.Remove(rec.ID + ".data")
	if _, ok := a.records[rec.ID]; ok {
		delete(a.records, rec.ID)
		a.undoBytes -= rec.DataSize
	}
}

// Purge removes the undo records whose window ended before now, and their copies, and
// returns how many it removed. It waits for a running change. Invoke purges on each call
// too, so calling Purge is needed only to reclaim space from an idle app.
func (a *App) Purge(now time.Time) int {
	a.sem <- struct{}{}
	defer a.unlock()
	return a.purgeLocked(now)
}

// tryPurge purges unless a change is running: a read never waits for a write to purge.
func (a *App) tryPurge(now time.Time) {
	select {
	case a.sem <- struct{}{}:
		a.purgeLocked(now)
		a.unlock()
	default:
	}
}

func (a *App) purgeLocked(now time.Time) int {
	n := 0
	for _, rec := range a.records {
		if now.After(rec.expires()) {
			a.discard(rec)
			n++
		}
	}
	return n
}

// Undo implements sdk.Undoer: it reverses the change whose undo token is token, made by
// capability id, within its window. The record is used once; an undo that is refused keeps
// it, so that it can be tried again (after the obstacle is moved) while the window lasts.
//
// What each undo does, always at the same path and never elsewhere:
//   - write_file over a file: writes the previous bytes and mode back atomically, even when
//     the file changed since (the person asked for the state before the write); refused when
//     nothing, or something other than a file, is at the path now.
//   - write_file that created the file: removes it, even when it changed since; refused when
//     it is gone or is no longer a file.
//   - delete_file: puts the file, link or empty folder back; refused when anything exists at
//     the path now, or its folder is gone.
//   - create_file: removes the file only when its bytes are still those it was created with.
//   - create_directory: removes the folder only when it is still empty.
func (a *App) Undo(ctx context.Context, id, token string, ic sdk.InvocationContext) error {
	start := time.Now()
	switch id {
	case WriteFileID, DeleteFileID, CreateFileID, CreateDirectoryID:
	case ListDirectoryID, ReadFileID:
		return sdk.ExecutionFailed("the capability changes nothing and has no undo", false)
	default:
		return sdk.NotFound(id)
	}
	if !validID(token) {
		return sdk.ExecutionFailed("the undo token is not one the files app issued", false)
	}
	if err := a.lock(ctx); err != nil {
		return callError(err, id, start)
	}
	defer a.unlock()
	rec := a.records[token]
	if rec == nil || rec.Capability != id {
		return sdk.ExecutionFailed("no undo record for the token: it was never issued for this capability, its window ended, or it was already used", false)
	}
	if time.Now().After(rec.expires()) {
		a.discard(rec)
		return sdk.ExecutionFailed("the undo window has ended", false)
	}
	var err error
	switch rec.Capability {
	case WriteFileID:
		err = a.undoWrite(ctx, rec)
	case DeleteFileID:
		err = a.undoDelete(ctx, rec)
	case CreateFileID:
		err = a.undoCreateFile(ctx, rec)
	case CreateDirectoryID:
		err = a.undoCreateDirectory(rec)
	}
	if err != nil {
		return callError(fsError(err), id, start)
	}
	a.discard(rec)
	return nil
}

// stillThere opens the folder of rec.Path, for undoing a change that left a regular file (or,
// with folder, a folder) at it, and checks that one is still there; since adds to the
// refusal when nothing is. The caller closes dir.
func (a *App) stillThere(rec *record, folder bool, since string) (dir *os.Root, base string, fi fs.FileInfo, err error) {
	what := "file"
	if folder {
		what = "folder"
	}
	dir, base, err = a.parent(rec.Path)
	if err != nil {
		return nil, "", nil, err
	}
	fi, err = dir.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = sdk.ExecutionFailed("the "+what+" is no longer at its path"+since+"; nothing was undone", false)
	case err != nil:
	case folder && !fi.IsDir(), !folder && !fi.Mode().IsRegular():
		err = sdk.ExecutionFailed("something other than the "+what+" is at its path now; nothing was undone", false)
	}
	if err != nil {
		dir.Close()
		return nil, "", nil, err
	}
	return dir, base, fi, nil
}

func (a *App) undoWrite(ctx context.Context, rec *record) error {
	dir, base, _, err := a.stillThere(rec, false, " (moved or deleted since)")
	if err != nil {
		return err
	}
	defer dir.Close()
	if rec.Prior == "" {
		if err := dir.Remove(base); err != nil {
			return err
		}
		syncDir(dir)
		return nil
	}
	tmp, err := a.restoreTemp(ctx, rec, dir)
	if err != nil {
		return err
	}
	if err := dir.Rename(tmp, base); err != nil {
		dir.Remove(tmp)
		return err
	}
	syncDir(dir)
	return nil
}

func (a *App) undoDelete(ctx context.Context, rec *record) error {
	dir, base, err := a.parent(rec.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return sdk.ExecutionFailed("the folder that held it no longer exists; nothing was restored", false)
		}
		return err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err == nil {
		return sdk.ExecutionFailed("something exists at the path now; nothing was restored", false)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	switch rec.Prior {
	case "file":
		tmp, err := a.restoreTemp(ctx, rec, dir)
		if err != nil {
			return err
		}
		if err := placeNew(dir, tmp, base); err != nil {
			return err
		}
	case "directory":
		if err := dir.Mkdir(base, fs.FileMode(rec.Mode)&fs.ModePerm); err != nil {
			return err
		}
		dir.Chmod(base, fs.FileMode(rec.Mode)&fs.ModePerm)
	case "symlink":
		if err := dir.Symlink(rec.Link, base); err != nil {
			return err
		}
	default:
		return sdk.ExecutionFailed("the undo record is damaged; nothing was restored", false)
	}
	syncDir(dir)
	return nil
}

func (a *App) undoCreateFile(ctx context.Context, rec *record) error {
	dir, base, fi, err := a.stillThere(rec, false, "")
	if err != nil {
		return err
	}
	defer dir.Close()
	if fi.Size() != rec.MadeSize {
		return sdk.ExecutionFailed("the file changed since it was created, so it was left in place", false)
	}
	f, err := openSame(dir, base, fi, os.O_RDONLY)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = copyCtx(ctx, h, io.LimitReader(f, rec.MadeSize+1))
	f.Close()
	if err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != rec.MadeSHA256 {
		return sdk.ExecutionFailed("the file changed since it was created, so it was left in place", false)
	}
	if err := dir.Remove(base); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

func (a *App) undoCreateDirectory(rec *record) error {
	dir, base, _, err := a.stillThere(rec, true, "")
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Remove(base); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return sdk.ExecutionFailed("the folder is no longer empty, so it was left in place", false)
		}
		return err
	}
	syncDir(dir)
	return nil
}

// restoreTemp writes rec's copy into a temporary file in dir with the prior mode, checking
// it against its recorded SHA-256, and returns the temporary name.
func (a *App) restoreTemp(ctx context.Context, rec *record, dir *os.Root) (string, error) {
	src, err := a.undo.Open(rec.ID + ".data")
	if err != nil {
		return "", sdk.ExecutionFailed("the undo record's copy is missing; nothing was restored", false)
	}
	defer src.Close()
	h := sha256.New()
	tmp, err := writeTemp(ctx, dir, io.TeeReader(io.LimitReader(src, rec.DataSize+1), h), fs.FileMode(rec.Mode)&fs.ModePerm, true,
		func() bool { return hex.EncodeToString(h.Sum(nil)) == rec.DataSHA256 })
	if errors.Is(err, errDamaged) {
		return "", sdk.ExecutionFailed("the undo record's copy is damaged; nothing was restored", false)
	}
	return tmp, err
}

var errDamaged = errors.New("copy does not match its digest")

// writeTemp writes what src yields into a new temporary file in dir, with mode perm (exactly,
// when exact; else as the umask allows), fsyncs it, and returns its name. When ok is not nil
// it is asked, after the copy, whether the bytes are right; errDamaged when not. The
// temporary file is removed on any failure.
func writeTemp(ctx context.Context, dir *os.Root, src io.Reader, perm fs.FileMode, exact bool, ok func() bool) (string, error) {
	name := ".capgate-" + newID()[:16] + ".tmp"
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOCTTY, perm)
	if err != nil {
		return "", err
	}
	_, err = copyCtx(ctx, f, src)
	if err == nil && ok != nil && !ok() {
		err = errDamaged
	}
	if err == nil && exact {
		err = f.Chmod(perm)
	}
	err = syncClose(f, err)
	if err != nil {
		dir.Remove(name)
		return "", err
	}
	return name, nil
}

// placeNew gives the temporary file tmp in dir the name base, failing when anything has that
// name: a hard link (which never replaces) then the temporary name's removal, or, on a
// filesystem without hard links, a check then a rename.
func placeNew(dir *os.Root, tmp, base string) error {
	err := dir.Link(tmp, base)
	if err == nil {
		dir.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		dir.Remove(tmp)
		return sdk.ExecutionFailed("something exists at the path now; nothing was written", false)
	}
	if _, err := dir.Lstat(base); !errors.Is(err, fs.ErrNotExist) {
		dir.Remove(tmp)
		return sdk.ExecutionFailed("something exists at the path now; nothing was written", false)
	}
	if err := dir.Rename(tmp, base); err != nil {
		dir.Remove(tmp)
		return err
	}
	return nil
}

// syncFile fsyncs the file name in r.
func syncFile(r *os.Root, name string) error {
	f, err := r.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return syncClose(f, nil)
}

// syncClose ends a write to f that err reports on: it fsyncs f if err is nil, closes f
// either way, and returns the first error.
func syncClose(f *os.File, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs the folder r so that names made or removed in it survive a crash. It is best
// effort: some filesystems refuse to sync a folder, and the change is made either way.
func syncDir(r *os.Root) {
	if f, err := r.Open("."); err == nil {
		f.Sync()
		f.Close()
	}
}

// hashOf is the SHA-256 of data in lowercase hex.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
