package files

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/capgate/capgate/sdk"
)

// entry is one line of list_directory's answer.
type entry struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Size        int64  `json:"size"`
	Modified    int64  `json:"modified"`
	Permissions string `json:"permissions"`
}

// listDirectory answers list_directory. The folder is opened as its own root and each entry
// examined through it without following links, so a link is listed as a link, whatever it
// points at. Names that are not valid UTF-8 cannot be named by a path param; they are left
// out and counted in "skipped".
func (a *App) listDirectory(ctx context.Context, raw json.RawMessage) (sdk.Result, error) {
	_, rel, err := a.decode(raw)
	if err != nil {
		return sdk.Result{}, err
	}
	dir, err := a.openDir(rel)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			if fi, serr := a.root.Lstat(rel); serr == nil && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
				return sdk.Result{}, sdk.ExecutionFailed("the path is not a folder", false)
			}
		}
		return sdk.Result{}, fsError(err)
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return sdk.Result{}, fsError(err)
	}
	defer f.Close()
	entries := []entry{}
	skipped, truncated := 0, false
	for !truncated {
		if err := ctx.Err(); err != nil {
			return sdk.Result{}, err
		}
		names, rerr := f.Readdirnames(listBatch)
		for _, name := range names {
			if !utf8.ValidString(name) {
				skipped++
				continue
			}
			fi, err := dir.Lstat(name)
			if err != nil {
				continue // gone since the folder was read
			}
			if len(entries) == MaxListEntries {
				truncated = true
				break
			}
			entries = append(entries, entry{
				Name: name, Type: kindOf(fi.Mode()), Size: max(fi.Size(), 0),
				Modified: fi.ModTime().Unix(), Permissions: fi.Mode().Perm().String()[1:],
			})
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return sdk.Result{}, fsError(rerr)
		}
	}
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.Name, y.Name) })
	data, err := json.Marshal(map[string]any{
		"path": a.show(rel), "entries": entries, "count": len(entries), "truncated": truncated, "skipped": skipped,
	})
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the answer could not be encoded", false)
	}
	return sdk.Result{Success: true, Data: data}, nil
}

// readFile answers read_file. The file is opened without blocking (a FIFO or device could
// otherwise hold the call) and refused unless it is a regular file.
func (a *App) readFile(ctx context.Context, raw json.RawMessage) (sdk.Result, error) {
	p, rel, err := a.decode(raw, "offset", "length")
	if err != nil {
		return sdk.Result{}, err
	}
	offset, err := integer(p.Offset, "offset", 0, MaxOffset, 0)
	if err != nil {
		return sdk.Result{}, err
	}
	length, err := integer(p.Length, "length", 1, MaxReadBytes, DefaultReadBytes)
	if err != nil {
		return sdk.Result{}, err
	}
	f, err := a.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return sdk.Result{}, fsError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sdk.Result{}, fsError(err)
	}
	if err := regular(fi); err != nil {
		return sdk.Result{}, err
	}
	size := fi.Size()
	var buf []byte
	if offset < size {
		buf = make([]byte, min(length, size-offset))
		n, err := f.ReadAt(buf, offset)
		if err != nil && err != io.EOF {
			return sdk.Result{}, fsError(err)
		}
		buf = buf[:n]
	}
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	eof := offset+int64(len(buf)) >= size
	if !eof {
		buf = trimPartialRune(buf)
	}
	content, encoding := string(buf), "utf-8"
	if !utf8.Valid(buf) {
		content, encoding = base64.StdEncoding.EncodeToString(buf), "base64"
	}
	data, err := json.Marshal(map[string]any{
		"path": a.show(rel), "content": content, "encoding": encoding,
		"size": size, "offset": offset, "returned": len(buf), "eof": eof,
	})
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the answer could not be encoded", false)
	}
	return sdk.Result{Success: true, Data: data}, nil
}

// trimPartialRune drops the start of a character cut by the end of a page, when that makes
// the page valid UTF-8, so that text read in pages stays text; the next page starts with it.
func trimPartialRune(buf []byte) []byte {
	if utf8.Valid(buf) {
		return buf
	}
	for k := 1; k < utf8.UTFMax && k < len(buf); k++ {
		i := len(buf) - k
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) && utf8.Valid(buf[:i]) {
				return buf[:i]
			}
			break
		}
	}
	return buf
}

// regular refuses anything but a regular file, saying what it is instead.
func regular(fi fs.FileInfo) error {
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		return sdk.ExecutionFailed("the path names a folder, not a file", false)
	case fi.Mode()&fs.ModeSymlink != 0:
		return sdk.ExecutionFailed("the path names a symbolic link; name its target instead", false)
	}
	return sdk.ExecutionFailed("the path names something other than a regular file", false)
}
