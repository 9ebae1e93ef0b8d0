package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/manifest"
)

// PackagesDir is the folder of the data folder where installed packages are kept, one folder
// per app and content digest: DATA/packages/APP_ID/HEX. What runs is the copy made at
// install, read-only, never the source the package was installed from.
const PackagesDir = "packages"

// ProgramFile is the program of a capability provider: the executable file of this name at
// the root of its package. capgate runs it with the package as its working folder.
const ProgramFile = "provider"

// PackageDir is where the package of appID with the content digest is kept in dataDir.
func PackageDir(dataDir, appID, digest string) string {
	return filepath.Join(dataDir, PackagesDir, appID, strings.TrimPrefix(digest, "sha256:"))
}

// ErrPackageChanged is a package whose content, as it was copied, is not the content checked:
// it changed between the check and the copy.
var ErrPackageChanged = errors.New("the package changed while it was installed: its content is not the content checked")

// keepLockFile is the file whose lock keeps Prune away while an install keeps a package the
// lockfile does not name yet: installs hold it shared from keeping the package until the
// lockfile is written, Prune exclusively.
const keepLockFile = "packages.lock"

// holdKeepLock takes the data folder's keep lock, shared or exclusive; with try, it fails at
// once (ok false) when another holds it. release unlocks it.
func holdKeepLock(dataDir string, exclusive, try bool) (release func(), ok bool, err error) {
	f, err := os.OpenFile(filepath.Join(dataDir, keepLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if try {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return func() { f.Close() }, true, nil
}

// keep copies the package at src into the data folder (PackageDir) unless a copy of the same
// content is there, and checks that what was copied is the content whose digest was checked.
// It holds the keep lock shared from before it looks until the caller calls release, once
// the lockfile names the package (or the install has failed), so that no Prune runs between.
func (h *Host) keep(src, appID, digest string) (release func(), err error) {
	if err := os.MkdirAll(h.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("plugin: keeping the package: %w", err)
	}
	release, _, err = holdKeepLock(h.DataDir, false, false)
	if err != nil {
		return nil, fmt.Errorf("plugin: keeping the package: %w", err)
	}
	if err := h.copyPackage(src, appID, digest); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// copyPackage is keep's copy.
func (h *Host) copyPackage(src, appID, digest string) error {
	dst := PackageDir(h.DataDir, appID, digest)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("plugin: keeping the package: %w", err)
	}
	staging, err := os.MkdirTemp(parent, ".staging-")
	if err != nil {
		return fmt.Errorf("plugin: keeping the package: %w", err)
	}
	os.Remove(staging) // Extract makes it, and must find none
	pkg, err := archive.Extract(src, staging)
	if err != nil {
		return fmt.Errorf("plugin: keeping the package: %w", err)
	}
	if pkg.Digest() != digest {
		archive.RemoveExtracted(staging)
		return ErrPackageChanged
	}
	if err := os.Rename(staging, dst); err != nil {
		archive.RemoveExtracted(staging)
		if _, serr := os.Stat(dst); serr == nil {
			return nil // another install kept the same content meanwhile
		}
		return fmt.Errorf("plugin: keeping the package: %w", err)
	}
	return nil
}

// Program is how an installed capability provider is started: its kept package and the
// program in it, with the program's digest as the package records it.
type Program struct {
	Dir     string // the kept package, the program's working folder
	Command string // Dir/provider
	Digest  string // the program's content digest
}

// ProgramOf finds the program of the installed plugin e in the data folder, checking the kept
// package again: its content must be the digest the lock pins, and hold an executable
// provider file at its root.
func ProgramOf(dataDir string, e lock.Entry) (Program, error) {
	dir := PackageDir(dataDir, e.AppID, e.Digest)
	pkg, err := archive.Open(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Program{}, errors.New("the package is not kept in the data folder: install it again (capgate plugin install)")
		}
		return Program{}, fmt.Errorf("the kept package cannot be read: %w", err)
	}
	if pkg.Digest() != e.Digest {
		return Program{}, errors.New("the kept package's content is not the one installed: its digest differs from the lock's")
	}
	f, ok := pkg.File(ProgramFile)
	if !ok || f.Mode&0o100 == 0 {
		return Program{}, fmt.Errorf("the package holds no program: a capability provider's package holds its program as the executable file %q at its root", ProgramFile)
	}
	return Program{Dir: dir, Command: filepath.Join(dir, ProgramFile), Digest: f.Digest}, nil
}

// Runs reports whether an installed plugin is one capgate runs: a capability provider that
// declares capabilities. Skills, playbooks and control packs carry no program.
func Runs(e lock.Entry) bool {
	doc, err := manifest.Parse(e.Manifest)
	if err != nil || doc.Manifest() == nil {
		return false
	}
	m := doc.Manifest()
	return (m.Kind == "" || m.Kind == manifest.KindCapabilityProvider) && len(m.Capabilities) > 0
}

// Prune removes the kept packages the lock no longer names, installed or pending, and what
// installs that did not finish left. While an install holds the keep lock (it has kept a
// package the lock does not name yet), Prune does nothing: the lockfile that install writes
// brings the next sync, and its Prune. The lockfile is read under the keep lock, never
// before it: a lockfile read earlier may predate an install that kept its package, wrote
// the lock and let go meanwhile, and pruning by it would remove that package.
func Prune(dataDir string) error {
	return prune(dataDir, func() (*lock.File, error) { return lock.Load(dataDir) })
}

// prune is Prune with the lockfile read by load, which it calls holding the keep lock.
func prune(dataDir string, load func() (*lock.File, error)) error {
	release, ok, err := holdKeepLock(dataDir, true, true)
	if err != nil || !ok {
		return err
	}
	defer release()
	f, err := load()
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, e := range f.Plugins {
		keep[PackageDir(dataDir, e.AppID, e.Digest)] = true
	}
	for _, p := range f.Pending {
		keep[PackageDir(dataDir, p.Entry.AppID, p.Entry.Digest)] = true
	}
	root := filepath.Join(dataDir, PackagesDir)
	apps, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range apps {
		if !a.IsDir() {
			continue
		}
		dir := filepath.Join(root, a.Name())
		vs, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		left := 0
		for _, v := range vs {
			p := filepath.Join(dir, v.Name())
			if keep[p] {
				left++
				continue
			}
			if err := archive.RemoveExtracted(p); err != nil {
				errs = append(errs, err)
				left++
			}
		}
		if left == 0 {
			os.Remove(dir)
		}
	}
	return errors.Join(errs...)
}
