package archive

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// openFolder reads the package in the folder dir. Every name is looked up with Lstat through an
// os.Root, so nothing is followed and nothing outside dir is reached even if the folder changes
// while it is read; a file is read only if the opened handle is the same regular file Lstat saw.
func openFolder(dir string, out *os.Root) (*Package, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, failure("", "cannot open the package folder", err)
	}
	defer root.Close()
	b := newBuilder(func(p string, err error) error {
		if errors.Is(err, errSizeChanged) {
			return failure(p, "file changed while it was read", err)
		}
		return failure(p, "cannot read the file", err)
	})
	b.out = out
	if err := walkFolder(root, b, ""); err != nil {
		return nil, err
	}
	return b.finish()
}

// walkFolder adds the entries of the folder rel ("" for the root), in name order so that the
// first refusal is the same on every run.
func walkFolder(root *os.Root, b *builder, rel string) error {
	names, err := readNames(root, rel)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		if rule := pathRule(p); rule != "" {
			return refuse(p, ErrPath, rule)
		}
		fi, err := root.Lstat(filepath.FromSlash(p))
		if err != nil {
			return failure(p, "cannot stat the entry", err)
		}
		switch t := fi.Mode().Type(); {
		case t == fs.ModeDir:
			if err := b.dir(p); err != nil {
				return err
			}
			if err := walkFolder(root, b, p); err != nil {
				return err
			}
		case t.IsRegular():
			if err := addFolderFile(root, b, p, fi); err != nil {
				return err
			}
		default:
			return refuse(p, ErrEntryType, "is "+typeName(t)+", not a regular file or folder")
		}
	}
	return nil
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	default:
		return "an irregular file"
	}
}

// readNames lists the folder rel, sorted by byte order, refusing a folder with more entries than
// a whole package may have before it has read them all.
func readNames(root *os.Root, rel string) ([]string, error) {
	d, err := root.Open(filepath.FromSlash(orDot(rel)))
	if err != nil {
		return nil, failure(rel, "cannot open the folder", err)
	}
	defer d.Close()
	var names []string
	for {
		batch, err := d.ReadDir(256)
		for _, e := range batch {
			names = append(names, e.Name())
		}
		if len(names) > MaxEntries {
			return nil, refuse(rel, ErrLimit, "folder has more entries than a package may have")
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, failure(rel, "cannot list the folder", err)
		}
	}
	slices.Sort(names)
	return names, nil
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// addFolderFile reads the regular file p that Lstat described as fi.
func addFolderFile(root *os.Root, b *builder, p string, fi fs.FileInfo) error {
	if linkCount(fi) > 1 {
		// Another name for the same inode may lie outside the package, or be swapped for
		// something else after install; a package is a tree of distinct files.
		return refuse(p, ErrEntryType, "is a hard link (its link count is above 1)")
	}
	f, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|openFlags, 0)
	if err != nil {
		return failure(p, "cannot open the file", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return failure(p, "cannot stat the file", err)
	}
	if !st.Mode().IsRegular() || !os.SameFile(fi, st) {
		return refuse(p, ErrEntryType, "was replaced while the package was read")
	}
	return b.file(p, fi.Mode().Perm()&0o100 != 0, fi.Size(), f)
}
