// Package atomicfile writes files so that a crash at any instant leaves either the old content,
// no file, or the whole new one, never a torn mix: keys, signed manifests and lockfiles are
// written this way.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// ErrExists is returned, wrapped with the path, when overwrite is false and the file exists.
var ErrExists = errors.New("file exists; refusing to replace it")

// Write puts data at path with exactly fileMode, creating a missing
// parent folder with exactly dirMode. Readers see either the old file, no
// file, or the whole new one.
//
// Without overwrite the final step is a hard link, which fails if path
// exists, so two writers racing cannot both succeed. On file systems without
// hard links it falls back to check-then-rename, which leaves a small window.
func Write(path string, data []byte, fileMode, dirMode fs.FileMode, overwrite bool) (err error) {
	dir := filepath.Dir(path)
	if err := ensureDir(dir, dirMode); err != nil {
		return err
	}
	if !overwrite {
		if err := refuseExisting(path); err != nil {
			return err
		}
	}

	// The leading dot keeps the temporary file out of the trust store's
	// *.pub listing and out of casual ls output.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		if err != nil {
			os.Remove(tmpName)
		}
	}()
	// CreateTemp makes the file 0600; Chmod sets the exact mode, which the
	// umask cannot change.
	if err := tmp.Chmod(fileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = tmp.Close()
	tmp = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if overwrite {
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	} else if err := os.Link(tmpName, path); err == nil {
		os.Remove(tmpName)
	} else if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrExists)
	} else {
		if err := refuseExisting(path); err != nil {
			return err
		}
		if err := os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: file is in place but its folder was not synced: %w", path, err)
	}
	return nil
}

func refuseExisting(path string) error {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return fmt.Errorf("%s: %w", path, ErrExists)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("write %s: %w", path, err)
	}
}

// ensureDir creates dir with exactly mode when it is missing. An existing
// folder is left alone: it may be shared, and its mode is its owner's choice.
func ensureDir(dir string, mode fs.FileMode) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a folder: %w", dir, syscall.ENOTDIR)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w", err)
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("%w", err)
	}
	// MkdirAll applies the umask; set the mode we promise.
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}

// syncDir makes a rename in dir durable. Windows cannot sync a folder, and
// some file systems answer EINVAL; neither makes the write itself fail.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
