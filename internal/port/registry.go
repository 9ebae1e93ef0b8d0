package port

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// KitIndexFile is the name of the kit index in a descriptor folder.
const KitIndexFile = "kits.json"

// Registry is the host's copy of the ports it supports and its kit index. It is immutable once
// built, so it is safe for concurrent use; the suite files it names are read from its folder
// when asked for (Suite). A nil *Registry supports no port and lists no suite:
// every port a manifest declares is then refused.
type Registry struct {
	ports  map[string]*Port // keyed by the port's manifest spelling, "knowledge.v1"
	suites map[string]bool
	dir    string // the folder LoadDir read, absolute; empty for New's (Suite reads no file)
}

// New builds a registry from ports and suites, holding each to the rules of the descriptor
// format (LoadDir's rules). It copies what it keeps. A port given twice is refused.
func New(ports []*Port, suites []string) (*Registry, error) {
	r := &Registry{ports: map[string]*Port{}, suites: map[string]bool{}}
	var errs []*FileError
	for _, p := range ports {
		if p == nil {
			errs = append(errs, &FileError{Rule: "nil port"})
			continue
		}
		// A port is checked in its descriptor form, so that New and LoadDir have one set of rules.
		data, err := json.Marshal(p)
		if err != nil {
			errs = append(errs, &FileError{File: p.String(), Rule: "cannot be written as a descriptor", err: err})
			continue
		}
		q, es := parseDescriptor(data, false)
		for _, e := range es {
			e.File = p.String()
		}
		errs = append(errs, es...)
		if q == nil {
			continue
		}
		if _, dup := r.ports[q.String()]; dup {
			errs = append(errs, &FileError{File: q.String(), Rule: "port given twice"})
			continue
		}
		r.ports[q.String()] = q
	}
	for _, s := range suites {
		if !conformancePattern.MatchString(s) {
			errs = append(errs, &FileError{File: KitIndexFile, Path: "suites", Rule: "must be conformance/<port>/v<major>/<suite>"})
			continue
		}
		r.suites[s] = true
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return r, nil
}

// LoadDir reads the host's descriptor folder: every file named <port>.v<major>.json, .yaml or
// .yml is the descriptor of that port, and kits.json, if present, is the kit index (absent, the
// index is empty and no conformance suite is accepted). Files with other extensions and
// folders without a descriptor's extension are ignored; a descriptor-looking file whose name is
// not a port's, a port described twice (json and yaml), or a file that is not a regular file is
// refused. Files are opened through an os.Root, so a symbolic link out of dir is refused.
// The conformance suites the index lists are read later, by Suite, from the subfolder
// conformance/ (a folder, so ignored here).
//
// Every problem of every file is reported at once: the error is a *FileError or several
// joined, each naming the file and the field, and wrapping ErrInvalidDescriptor. An error
// reading the folder itself is returned wrapped as it is.
func LoadDir(dir string) (*Registry, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	r := &Registry{ports: map[string]*Port{}, suites: map[string]bool{}, dir: abs}
	var errs []*FileError
	fileOf := map[string]string{} // port spelling → the file that described it
	files := 0
	for _, e := range entries { // in name order
		name := e.Name()
		if name == KitIndexFile {
			data, ferr := readFile(root, name)
			if ferr != nil {
				errs = append(errs, ferr)
				continue
			}
			suites, es := parseKits(data)
			for _, fe := range es {
				fe.File = name
			}
			errs = append(errs, es...)
			if suites != nil {
				r.suites = suites
			}
			continue
		}
		stem, yaml, ok := descriptorName(name)
		if !ok {
			continue
		}
		if files++; files > MaxDescriptorFiles {
			errs = append(errs, &FileError{File: name, Rule: fmt.Sprintf("more than %d descriptor files", MaxDescriptorFiles)})
			break
		}
		if !portPattern.MatchString(stem) {
			errs = append(errs, &FileError{File: name, Rule: "a descriptor's name must be <port>.v<major>.json or .yaml, such as knowledge.v1.json"})
			continue
		}
		data, ferr := readFile(root, name)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		p, es := parseDescriptor(data, yaml)
		for _, fe := range es {
			fe.File = name
		}
		errs = append(errs, es...)
		if p == nil {
			continue
		}
		if p.String() != stem {
			errs = append(errs, &FileError{File: name, Path: "port", Rule: "must be the port the file is named for"})
			continue
		}
		if first, dup := fileOf[stem]; dup {
			errs = append(errs, &FileError{File: name, Rule: "describes the same port as " + first})
			continue
		}
		fileOf[stem] = name
		r.ports[stem] = p
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return r, nil
}

// descriptorName splits a file name into its stem and whether it is YAML; ok is false for a
// name without a descriptor's extension (.json, .yaml, .yml, in any case).
func descriptorName(name string) (stem string, yaml, ok bool) {
	ext := path.Ext(name)
	switch strings.ToLower(ext) {
	case ".json":
		return strings.TrimSuffix(name, ext), false, true
	case ".yaml", ".yml":
		return strings.TrimSuffix(name, ext), true, true
	}
	return "", false, false
}

// readFile reads one regular file of the folder, refusing one larger than MaxDescriptorBytes
// without reading it whole.
func readFile(root *os.Root, name string) ([]byte, *FileError) {
	f, err := root.Open(name)
	if err != nil {
		return nil, &FileError{File: name, Rule: "cannot be opened", err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &FileError{File: name, Rule: "cannot be read", err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &FileError{File: name, Rule: "must be a regular file"}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxDescriptorBytes+1))
	if err != nil {
		return nil, &FileError{File: name, Rule: "cannot be read", err: err}
	}
	if len(data) > MaxDescriptorBytes {
		return nil, &FileError{File: name, Rule: fmt.Sprintf("larger than %d bytes", MaxDescriptorBytes)}
	}
	return data, nil
}

// Port returns a copy of the host's descriptor of port name at major, such as
// ("knowledge", 1). The copy is the caller's to change; the registry's stays as loaded.
func (r *Registry) Port(name string, major int) (*Port, bool) {
	p := r.lookup(name, major)
	if p == nil {
		return nil, false
	}
	c := &Port{Name: p.Name, Major: p.Major, Methods: maps.Clone(p.Methods), Definitions: slices.Clone(p.Definitions)}
	for k, m := range c.Methods {
		m.Evidence = slices.Clone(m.Evidence)
		c.Methods[k] = m
	}
	return c, true
}

func (r *Registry) lookup(name string, major int) *Port {
	if r == nil {
		return nil
	}
	return r.ports[(&Port{Name: name, Major: major}).String()]
}

// Ports lists the manifest spellings of the host's ports, such as "knowledge.v1", sorted.
func (r *Registry) Ports() []string {
	if r == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(r.ports))
}

// HasSuite reports whether the kit index lists the conformance suite name. The name is compared
// as a string and never opened.
func (r *Registry) HasSuite(name string) bool {
	return r != nil && r.suites[name]
}
