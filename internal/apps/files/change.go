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

// A change is what one change call does to the name it names; change runs its parts in
// order, with the app's lock held and the folder holding the name open.
type change struct {
	// look examines what stands at the name now and returns what the change replaces (nil:
	// nothing), or refuses the call. Nil looks at nothing: the change replaces nothing.
	look func(dir *os.Root, base string) (prior fs.FileInfo, err error)
	// keep adds to the undo record, when one is kept, what undo needs to know of the change.
	// Nil adds nothing.
	keep func(rec *record)
	// do makes the change; its error is read by fsError.
	do func(dir *os.Root, base string, prior fs.FileInfo) error
}

// change makes c to rel, the one sequence every change follows: take the app's lock, which
// serializes changes, and open the folder holding rel (parent); look at what is there; make
// its undo record (begin, then keep) and commit it first, so that no change is made that
// could not be undone; make the change, dropping the record of one that failed. It returns
// the undo token ("" when no record is kept), and do's error as fsError reads it.
func (a *App) change(ctx context.Context, id, rel string, c change) (undo string, err error) {
	if err := a.lock(ctx); err != nil {
		return "", err
	}
	defer a.unlock()
	dir, base, err := a.parent(rel)
	if err != nil {
		return "", err
	}
	defer dir.Close()
	var prior fs.FileInfo
	if c.look != nil {
		if prior, err = c.look(dir, base); err != nil {
			return "", err
		}
	}
	rec, err := a.begin(ctx, id, rel, dir, base, prior)
	if err != nil {
		return "", err
	}
	if rec != nil && c.keep != nil {
		c.keep(rec)
	}
	if err := a.commit(rec); err != nil {
		return "", err
	}
	if err := c.do(dir, base, prior); err != nil {
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
	created := false
	undo, err := a.change(ctx, id, rel, change{
		look: func(dir *os.Root, base string) (fs.FileInfo, error) {
			fi, err := dir.Lstat(base)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				created = true
				return nil, nil
			case err != nil:
				return nil, fsError(err)
			}
			if err := regular(fi); err != nil {
				return nil, err
			}
			if mode == "overwrite" {
				// The rename below needs only the folder's permission; open the file for
				// writing first so that a file the filesystem keeps read-only stays unchanged.
				f, err := openSame(dir, base, fi, os.O_WRONLY)
				if err != nil {
					return nil, err
				}
				f.Close()
			}
			return fi, nil
		},
		do: func(dir *os.Root, base string, prior fs.FileInfo) error {
			return write(ctx, dir, base, prior, mode, data)
		},
	})
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "bytes_written": len(data), "created": created}, undo)
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
	var kind string
	undo, err := a.change(ctx, id, rel, change{
		look: func(dir *os.Root, base string) (fs.FileInfo, error) {
			fi, err := dir.Lstat(base)
			if err != nil {
				return nil, fsError(err)
			}
			kind = kindOf(fi.Mode())
			switch kind {
			case "other":
				return nil, sdk.ExecutionFailed("only files, symbolic links and empty folders can be deleted", false)
			case "directory":
				if err := empty(dir, base); err != nil {
					return nil, err
				}
			}
			return fi, nil
		},
		do: func(dir *os.Root, base string, _ fs.FileInfo) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return dir.Remove(base)
		},
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
	undo, err := a.change(ctx, id, rel, change{
		// Undo removes the file only while it still holds what was written.
		keep: func(rec *record) { rec.MadeSize, rec.MadeSHA256 = int64(len(data)), hashOf(data) },
		do: func(dir *os.Root, base string, _ fs.FileInfo) error {
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
		},
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
	undo, err := a.change(ctx, id, rel, change{
		do: func(dir *os.Root, base string, _ fs.FileInfo) error { return dir.Mkdir(base, 0o755) },
	})
	if err != nil {
		return sdk.Result{}, err
	}
	return answer(map[string]any{"path": a.show(rel), "created": true}, undo)
}
