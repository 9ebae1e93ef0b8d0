package definition

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Set is the definitions a host knows, by name@major.minor.
type Set struct {
	byRef map[string]*Definition
}

// Get returns the definition ref names (name@major.minor), or nil.
func (s *Set) Get(ref string) *Definition {
	if s == nil {
		return nil
	}
	return s.byRef[ref]
}

// Find returns the definition of name at the highest minor version of major that is at
// least minor: what a reference name@major.minor is satisfied by (a minor version only adds).
func (s *Set) Find(name string, major, minor uint32) *Definition {
	var best *Definition
	for _, d := range s.All() {
		if d.Name == name && d.Version.Major == major && d.Version.Minor >= minor {
			if best == nil || d.Version.Minor > best.Version.Minor {
				best = d
			}
		}
	}
	return best
}

// All returns every definition, by name then version.
func (s *Set) All() []*Definition {
	if s == nil {
		return nil
	}
	out := make([]*Definition, 0, len(s.byRef))
	for _, d := range s.byRef {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Definition) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if a.Version.Major != b.Version.Major {
			return int(a.Version.Major) - int(b.Version.Major)
		}
		return int(a.Version.Minor) - int(b.Version.Minor)
	})
	return out
}

// LoadError is why one file of a definitions folder was not loaded.
type LoadError struct {
	File     string
	Problems manifest.Problems // the format's, when that is why
	Err      error             // otherwise: the signature, a duplicate, a missing parent
}

// Error returns "definition: FILE: why".
func (e *LoadError) Error() string {
	if len(e.Problems) > 0 {
		return fmt.Sprintf("definition: %s: %d problem(s): %s", e.File, len(e.Problems), e.Problems[0])
	}
	return fmt.Sprintf("definition: %s: %v", e.File, e.Err)
}

// Unwrap returns the cause.
func (e *LoadError) Unwrap() error { return e.Err }

// ErrDuplicate is a second file defining a name@major.minor already loaded.
var ErrDuplicate = errors.New("another file defines the same name and version")

// ErrNoParent is an extension whose parent (its extends) is not in the set.
var ErrNoParent = errors.New("the definition it extends is not loaded")

// LoadDir loads every *.json file of dir (not its subfolders) as a signed definition under
// root: a file with a problem, an unsigned file, one no trusted key of its namespace verifies,
// a second file of the same name and version, and an extension whose parent is missing are
// each left out, with a LoadError saying why. A missing folder is an empty set.
func LoadDir(dir, root string, ks KeySource) (*Set, []error) {
	return LoadDirs([]string{dir}, root, ks)
}

// LoadDirs is LoadDir over several folders, as one set: the host's definitions folder and the
// definitions of its plugin ports. A name and version in two folders is a duplicate like one
// in two files, and an extension may extend a definition of another folder. With more than
// one folder a LoadError's File is the file's path.
func LoadDirs(dirs []string, root string, ks KeySource) (*Set, []error) {
	s := &Set{byRef: map[string]*Definition{}}
	var errs []error
	files := map[string]string{} // ref → file, for duplicates
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("definition: read the folder: %w", err))
			continue
		}
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
				continue
			}
			name := e.Name()
			if len(dirs) > 1 {
				name = filepath.Join(dir, name)
			}
			def, lerr := loadFile(filepath.Join(dir, e.Name()), root, ks)
			if lerr != nil {
				lerr.File = name
				errs = append(errs, lerr)
				continue
			}
			if other, dup := files[def.Ref()]; dup {
				errs = append(errs, &LoadError{File: name, Err: fmt.Errorf("%w (%s)", ErrDuplicate, other)})
				continue
			}
			files[def.Ref()] = name
			s.byRef[def.Ref()] = def
		}
	}
	// Extensions whose parent is missing go, until none is left: dropping one may orphan its
	// own extensions.
	for changed := true; changed; {
		changed = false
		for ref, def := range s.byRef {
			if p := def.Extends; p != nil && s.Find(p.Name(), p.Version().Major, p.Version().Minor) == nil {
				errs = append(errs, &LoadError{File: files[ref], Err: fmt.Errorf("%w (%s)", ErrNoParent, p)})
				delete(s.byRef, ref)
				changed = true
			}
		}
	}
	return s, errs
}

func loadFile(path, root string, ks KeySource) (*Definition, *LoadError) {
	data, err := readLimited(path)
	if err != nil {
		return nil, &LoadError{Err: err}
	}
	def, ps := Parse(data, root)
	if len(ps) > 0 {
		return nil, &LoadError{Problems: ps}
	}
	if err := Verify(def, ks); err != nil {
		return nil, &LoadError{Err: err}
	}
	return def, nil
}

// readLimited reads a file of at most MaxFileBytes.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	return data, nil
}

// ReadFile reads a definition file as its author wrote it: YAML for .yaml and .yml, else
// JSON, and parses it under root.
func ReadFile(path, root string) (*Definition, manifest.Problems, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, nil, err
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		def, ps := ParseYAML(data, root)
		return def, ps, nil
	}
	def, ps := Parse(data, root)
	return def, ps, nil
}
