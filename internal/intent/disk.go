package intent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	rulePathDiskRoot    = "cannot be checked on disk: the host's sandbox root does not resolve"
	rulePathDiskError   = "cannot be checked on disk: an existing prefix could not be examined"
	rulePathDiskLink    = "must not pass through a symbolic link that does not resolve"
	rulePathDiskOutside = "must not resolve outside the sandbox root on disk"
	rulePathDiskProt    = "must not resolve into a protected mount on disk"
)

// diskRule resolves the symbolic links along every existing prefix of p, a lexically valid path
// inside root, and refuses it if any prefix resolves outside the resolved root or into a
// resolved protected mount. The walk stops at the first prefix that does not exist: what is
// not there yet cannot point anywhere, and run-time access must confine itself in any case.
//
// Each prefix is examined with os.Lstat; a symbolic link is resolved with
// filepath.EvalSymlinks, anything else extends the resolved path of its parent by its own
// name. A link that does not resolve (dangling, a loop) is refused, since it could be made to
// point anywhere later.
func diskRule(p, root string, h Host) string {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return rulePathDiskRoot
	}
	// Each protected mount is compared by where it lies on disk, by its place under the
	// resolved root, and, when it exists, by identity (device and inode), which also catches a
	// bind mount or another name of the same directory inside the sandbox.
	var prots []string
	var protFiles []fs.FileInfo
	for _, prot := range h.protected(root) {
		prots = append(prots, resolveMount(prot, root, realRoot))
		if within(prot, root) {
			prots = append(prots, strings.TrimSuffix(realRoot, "/")+strings.TrimPrefix(prot, strings.TrimSuffix(root, "/")))
		}
		if fi, err := os.Stat(prot); err == nil {
			protFiles = append(protFiles, fi)
		}
	}
	resolved := realRoot
	lexical := root
	rest := strings.TrimPrefix(p[len(root):], "/")
	if rest == "" {
		return ""
	}
	for seg := range strings.SplitSeq(rest, "/") {
		lexical = strings.TrimSuffix(lexical, "/") + "/" + seg
		fi, err := os.Lstat(lexical)
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if err != nil {
			return rulePathDiskError
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			r, err := filepath.EvalSymlinks(lexical)
			if err != nil {
				return rulePathDiskLink
			}
			resolved = r
		} else {
			resolved = strings.TrimSuffix(resolved, "/") + "/" + seg
		}
		if !within(resolved, realRoot) {
			return rulePathDiskOutside
		}
		for _, prot := range prots {
			if within(resolved, prot) {
				return rulePathDiskProt
			}
		}
		if len(protFiles) > 0 {
			if st, err := os.Stat(lexical); err == nil {
				for _, pf := range protFiles {
					if os.SameFile(st, pf) {
						return rulePathDiskProt
					}
				}
			}
		}
	}
	return ""
}

// resolveMount returns where a protected mount lies on disk: its resolved path if it exists,
// else its place under the resolved root, else itself.
func resolveMount(prot, root, realRoot string) string {
	if r, err := filepath.EvalSymlinks(prot); err == nil {
		return r
	}
	if within(prot, root) {
		return strings.TrimSuffix(realRoot, "/") + strings.TrimPrefix(prot, strings.TrimSuffix(root, "/"))
	}
	return prot
}
