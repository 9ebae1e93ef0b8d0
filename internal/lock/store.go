package lock

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/jcs"
)

// Modes of the lockfile and of a data folder Save creates: the lockfile says which code the
// host runs, so only its owner may read or change it.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// tempPrefix starts the names of atomicfile.Write's temporary files for the lockfile.
const tempPrefix = "." + FileName + ".tmp-"

// flockName is the file Update and Cleanup lock. It is never removed: removing a lock file
// while another process waits on it would let two processes hold "the" lock at once.
const flockName = FileName + ".flock"

// Load reads dir/capgate.lock as Parse does. A missing file (or folder) is an empty lockfile,
// New(). Temporary files left by an interrupted Save are ignored; Cleanup removes them.
func Load(dir string) (*File, error) {
	data, err := readLimited(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{Rule: fmt.Sprintf("larger than %d bytes", MaxFileBytes), Err: jcs.ErrTooLarge}
	}
	return data, nil
}

// Save validates f and replaces dir/capgate.lock with Encode(f) atomically: a crash at any
// instant leaves the old file or the new one. It creates dir (mode 0700) when missing; the
// file is mode 0600. On a validation error nothing is written.
//
// Save alone does not serialize with other writers: two processes that each Load, change and
// Save can lose one change. Use Update for read-modify-write.
func Save(dir string, f *File) error {
	data, err := Encode(f)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, FileName), data, fileMode, dirMode, true)
}

// Update loads the lockfile, calls fn with it and saves the result, holding an exclusive
// advisory lock on dir/capgate.lock.flock throughout, so that concurrent Updates from any
// goroutine or process each see the previous one's result. When Load, fn or the validation
// fails, the file is left as it was and the error returned (fn's as is). Update waits as long
// as another holder keeps the lock; fn must not call Update or Cleanup on the same dir, which
// would wait for itself.
func Update(dir string, fn func(*File) error) error {
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := Load(dir)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	return Save(dir, f)
}

// Cleanup removes the temporary files (.capgate.lock.tmp-*) that a Save interrupted by a
// crash leaves in dir. It holds Update's lock, so it never removes the file of an Update in
// progress; a bare Save running at the same time may fail (never corrupt the lockfile). A
// missing dir is not an error.
func Cleanup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
