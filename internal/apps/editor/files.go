package editor

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/capgate/capgate/sdk"
)

// readText reads the file at rel through the root: a regular file of at most MaxFileBytes of
// UTF-8 text without NUL. It opens without blocking, so that a pipe put in the file's place
// is refused instead of waiting for a writer.
func (a *App) readText(rel string) ([]byte, error) {
	data, _, err := a.readRegular(rel)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, badPath("names a file that is not UTF-8 text")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, badPath("names a file that is not text (it holds NUL bytes)")
	}
	return data, nil
}

// readRegular reads the regular file at rel, at most MaxFileBytes, and its mode.
func (a *App) readRegular(rel string) ([]byte, fs.FileMode, error) {
	f, err := a.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fsError(err, a.escape, "names no file in the editor's folder")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, sdk.ExecutionFailed("the file could not be read", true)
	}
	switch {
	case fi.IsDir():
		return nil, 0, badPath("names a folder, not a file")
	case !fi.Mode().IsRegular():
		return nil, 0, badPath("names a device, pipe or socket, not a regular file")
	case fi.Size() > MaxFileBytes:
		return nil, 0, badPath("names a file larger than 1048576 bytes")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, 0, sdk.ExecutionFailed("the file could not be read", true)
	}
	if len(data) > MaxFileBytes {
		return nil, 0, badPath("names a file larger than 1048576 bytes")
	}
	return data, fi.Mode().Perm(), nil
}

// previous is what a file held before a save, for its undo.
type previous struct {
	existed bool
	data    []byte
	mode    fs.FileMode
	kept    bool // data holds the old bytes; false when the file was too large to keep
}

// before looks at the file a save is about to replace: it must be a regular file or nothing.
// A symbolic link is refused rather than replaced by a file, which would quietly unlink it.
func (a *App) before(rel string) (previous, error) {
	fi, err := a.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return previous{mode: DefaultFileMode, kept: true}, nil
	case err != nil:
		return previous{}, fsError(err, a.escape, "names a folder that does not exist")
	case fi.Mode()&fs.ModeSymlink != 0:
		return previous{}, badPath("names a symbolic link: save to the file it points to")
	case fi.IsDir():
		return previous{}, badPath("names a folder, not a file")
	case !fi.Mode().IsRegular():
		return previous{}, badPath("names a device, pipe or socket, not a regular file")
	}
	p := previous{existed: true, mode: fi.Mode().Perm()}
	if fi.Size() <= MaxFileBytes {
		data, _, err := a.readRegular(rel)
		if err == nil {
			p.data, p.kept = data, true
		}
	}
	return p, nil
}

// writeAtomic replaces the file at rel with data: it writes a new file beside it, syncs it
// and renames it over rel, all through the root, so a reader sees the old bytes or the new,
// never a mix, and a crash leaves at worst a stray temporary file.
func (a *App) writeAtomic(rel string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(rel)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, ".capgate-editor-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := a.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fsError(err, a.escape, "names a folder that does not exist")
	}
	failed := func() error {
		f.Close()
		_ = a.root.Remove(tmp)
		return sdk.ExecutionFailed("the file could not be written", true)
	}
	if _, err := f.Write(data); err != nil {
		return failed()
	}
	if err := f.Chmod(mode); err != nil {
		return failed()
	}
	if err := f.Sync(); err != nil {
		return failed()
	}
	if err := f.Close(); err != nil {
		_ = a.root.Remove(tmp)
		return sdk.ExecutionFailed("the file could not be written", true)
	}
	if err := a.root.Rename(tmp, rel); err != nil {
		_ = a.root.Remove(tmp)
		return fsError(err, a.escape, "names a folder that does not exist")
	}
	// The rename is durable once the folder is synced; a failure here loses nothing written.
	if d, err := a.root.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
