package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/capgate/capgate/sdk"
)

// parent opens the folder holding rel (not the root itself) as its own root, and returns it
// with rel's last name. Working on one name in an opened folder pins the folder: a link
// swapped in along the path later changes nothing for this call.
func (a *App) parent(rel string) (*os.Root, string, error) {
	if rel == "." {
		return nil, "", sdk.ExecutionFailed("the path names the files app's folder itself", false)
	}
	dir, err := a.openDir(filepath.Dir(rel))
	if err != nil {
		return nil, "", fsError(err)
	}
	return dir, filepath.Base(rel), nil
}

// openDir opens the folder rel as its own root. os.Root.OpenRoot opens its last name without
// O_DIRECTORY, so a FIFO there would block the call; a trailing slash has os.Root check that
// the name is a folder first (ENOTDIR otherwise). Only someone with other access to the
// folder, swapping a folder for a FIFO between that check and the open, can still block it.
func (a *App) openDir(rel string) (*os.Root, error) {
	if rel != "." {
		rel += string(filepath.Separator)
	}
	return a.root.OpenRoot(rel)
}

// openChange takes the app's lock, which serializes changes, and opens the folder holding rel
// for one change; done closes the folder and releases the lock.
func (a *App) openChange(ctx context.Context, rel string) (dir *os.Root, base string, done func(), err error) {
	if err := a.lock(ctx); err != nil {
		return nil, "", nil, err
	}
	dir, base, err = a.parent(rel)
	if err != nil {
		a.unlock()
		return nil, "", nil, err
	}
	return dir, base, func() { dir.Close(); a.unlock() }, nil
}

// apply makes a change in dir whose undo record begin made (nil: none is kept). The record is
// committed first, so that no change is made that could not be undone; then do makes the
// change, and the record of a change that failed is dropped. It returns the undo token, and
// do's error as fsError reads it.
func (a *App) apply(dir *os.Root, rec *record, do func() error) (undo string, err error) {
	if err := a.commit(rec); err != nil {
		return "", err
	}
	if err := do(); err != nil {
		a.discard(rec)
		return "", fsError(err)
	}
	syncDir(dir)
	return tokenOf(rec), nil
}

func answer(v map[string]any, undo string) (sdk.Result, error) {
	v["status"] = "success"
	data, err := json.Marshal(v)
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the answer could not be encoded", false)
	}
	return sdk.Result{Success: true, Data: data, UndoToken: undo}, nil
}

func tokenOf(rec *record) string {
	if rec == nil {
		return ""
	}
	return rec.ID
}

// writeFile answers write_file. Overwrite writes a temporary file beside the target, fsyncs
// it and renames it over the target, so a reader sees the old bytes or the new, never a mix;
// the file keeps its permission bits but becomes a new inode (owned by the gateway's user, no
// longer sharing hard links). Append adds to the end of the same file and fsyncs it. A new
// file is given its name only if nothing took the name meanwhile. A symbolic link at the path
// is refused rather than replaced or followed. The previous bytes are kept for undo first.
func (a *App) writeFile(ctx context.Context, id string, raw json.RawMessage) (sdk.Result, error) {
	p, rel, err := a.decode(raw, "content", "mode", "encoding")
	if err != nil {
		return sdk.Result{}, err
	}
	if p.Content == nil {
		return sdk.Result{}, badParam("content", "is required")
	}
	data, err := decodeContent(*p.Content, p.Encoding)
	if err != nil {
		return sdk.Result{}, err
	}
	mode := p.Mode
	switch mode {
	case "":
		mode = "overwrite"
	case "overwrite", "append":
	default:
		return sdk.Result{}, badParam("mode", "must be overwrite or append")
	}
	dir, base, done, err := a.openChange(ctx, rel)
	if err != nil {
		return sdk.Result{}, err
	}
	defer done()
	var prior fs.FileInfo
	fi, err := dir.Lstat(base)
	switch {
	case err == nil:
		if err := regular(fi); err != nil {
			return sdk.Result{}, err
		}
		prior = fi
	case !errors.Is(err, fs.ErrNotExist):
		return sdk.Result{}, fsError(err)
	}
	if prior != nil && mode == "overwrite" {
		// The rename below needs only the folder's permission; open the file for writing
		// first so that a file the filesystem keeps read-only stays unchanged.
		f, err := openSame(dir, base, prior, os.O_WRONLY)
		if err != nil {
			return sdk.Result{}, err
		}
		f.Close()
	}
	rec, err := a.begin(ctx, id, rel, dir, base, prior)
	if err != nil {
		return sdk.Result{}, err
	}
	undo, err := a.apply(dir, rec, func() error { return write(ctx, dir, base, prior, mode, data) })
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "bytes_written": len(data), "created": prior == nil}, undo)
}

func write(ctx context.Context, dir *os.Root, base string, prior fs.FileInfo, mode string, data []byte) error {
	if mode == "append" && prior != nil {
		f, err := openSame(dir, base, prior, os.O_WRONLY|os.O_APPEND)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return syncClose(f, err)
	}
	perm, exact := fs.FileMode(0o644), false
	if prior != nil {
		perm, exact = prior.Mode().Perm(), true
	}
	tmp, err := writeTemp(ctx, dir, bytes.NewReader(data), perm, exact, nil)
	if err != nil {
		return err
	}
	if prior == nil {
		return placeNew(dir, tmp, base)
	}
	if err := dir.Rename(tmp, base); err != nil {
		dir.Remove(tmp)
		return err
	}
	return nil
}

// deleteFile answers delete_file: a file (its bytes copied into the undo area, then the file
// removed), a symbolic link (the link, not its target) or an empty folder. A folder with
// entries is refused; so is anything else (a device, a socket, a FIFO). Changes are
// serialized, so no call of this app changes the file between the copy and the removal.
func (a *App) deleteFile(ctx context.Context, id string, raw json.RawMessage) (sdk.Result, error) {
	_, rel, err := a.decode(raw)
	if err != nil {
		return sdk.Result{}, err
	}
	dir, base, done, err := a.openChange(ctx, rel)
	if err != nil {
		return sdk.Result{}, err
	}
	defer done()
	fi, err := dir.Lstat(base)
	if err != nil {
		return sdk.Result{}, fsError(err)
	}
	kind := kindOf(fi.Mode())
	switch kind {
	case "other":
		return sdk.Result{}, sdk.ExecutionFailed("only files, symbolic links and empty folders can be deleted", false)
	case "directory":
		if err := empty(dir, base); err != nil {
			return sdk.Result{}, err
		}
	}
	rec, err := a.begin(ctx, id, rel, dir, base, fi)
	if err != nil {
		return sdk.Result{}, err
	}
	undo, err := a.apply(dir, rec, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return dir.Remove(base)
	})
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "deleted": true, "type": kind}, undo)
}

// empty refuses a folder that has entries.
func empty(dir *os.Root, base string) error {
	f, err := dir.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fsError(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return errChanged()
	}
	names, _ := f.Readdirnames(1)
	if len(names) > 0 {
		return sdk.ExecutionFailed("the folder is not empty; delete its entries first", false)
	}
	return nil
}

// createFile answers create_file: a new file, never one that exists (O_EXCL, which also
// refuses a dangling link at the path).
func (a *App) createFile(ctx context.Context, id string, raw json.RawMessage) (sdk.Result, error) {
	p, rel, err := a.decode(raw, "content", "encoding")
	if err != nil {
		return sdk.Result{}, err
	}
	content := ""
	if p.Content != nil {
		content = *p.Content
	}
	data, err := decodeContent(content, p.Encoding)
	if err != nil {
		return sdk.Result{}, err
	}
	dir, base, done, err := a.openChange(ctx, rel)
	if err != nil {
		return sdk.Result{}, err
	}
	defer done()
	rec, err := a.begin(ctx, id, rel, dir, base, nil)
	if err != nil {
		return sdk.Result{}, err
	}
	if rec != nil {
		rec.MadeSize, rec.MadeSHA256 = int64(len(data)), hashOf(data)
	}
	undo, err := a.apply(dir, rec, func() error {
		f, err := dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOCTTY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err := syncClose(f, err); err != nil {
			dir.Remove(base)
			return err
		}
		return nil
	})
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "created": true, "bytes_written": len(data)}, undo)
}

// createDirectory answers create_directory: one new folder in an existing one.
func (a *App) createDirectory(ctx context.Context, id string, raw json.RawMessage) (sdk.Result, error) {
	_, rel, err := a.decode(raw)
	if err != nil {
		return sdk.Result{}, err
	}
	dir, base, done, err := a.openChange(ctx, rel)
	if err != nil {
		return sdk.Result{}, err
	}
	defer done()
	rec, err := a.begin(ctx, id, rel, dir, base, nil)
	if err != nil {
		return sdk.Result{}, err
	}
	undo, err := a.apply(dir, rec, func() error { return dir.Mkdir(base, 0o755) })
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "created": true}, undo)
}
