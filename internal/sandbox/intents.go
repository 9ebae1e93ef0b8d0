package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/manifest"
)

// A capability's filesystem_intents name paths inside the host's sandbox root (sandbox_root,
// /sandbox by default), each read_only or read_write. The sandbox shows each at its own path
// and nothing else of the host. What backs them is a folder of the app's own on the host,
// AppFolder: DATA/sandbox/<app id>. The intent /sandbox/notes of app org.example.kb is the
// host folder DATA/sandbox/org.example.kb/notes, made (mode 0700) the first time a sandbox
// needs it. So:
//
//   - two apps never share a folder, even when they declare the same path: each has its own
//     tree, and nothing of one is under the other's;
//   - every capability of one app sees the same folder at the same path: what a read_write
//     capability wrote there, a read_only capability of the same app reads;
//   - nothing but capgate's data folder backs an intent: a person who wants an app to work
//     on some folder of theirs puts it (or a bind mount of it) at that place in the app's
//     folder; capgate makes no link to anywhere else itself.
//
// The app's folder is the app's own to fill, so the way to an intent's folder is opened
// below the app's folder without following a symbolic link anywhere (os.Root, and no link
// along the way at all): a read_write folder where the app made a link cannot point a later
// bind at the host's /etc. Each folder is handed to bwrap as the descriptor opened, not as a
// path to look up again.

// AppFolder returns the host folder that backs the sandbox root for app: DATA/sandbox/<app id>,
// dataDir being capgate's data folder. The app id is a reverse-DNS name, one path segment.
func AppFolder(dataDir string, app manifest.AppID) string {
	return filepath.Join(dataDir, "sandbox", app.String())
}

// IntentBinds returns the binds that show intents, paths under sandboxRoot ("" is /sandbox),
// in a sandbox, backed by the folders under hostRoot (an app's AppFolder) at the same place
// below the root, made when missing. The caller closes the binds' folders with closeAll once
// the command has started (and closeAll is a no-op on error). An intent path that is not a
// clean path inside the root, or whose way on the host holds a symbolic link or a file that
// is not a folder, is refused, naming its index.
func IntentBinds(sandboxRoot, hostRoot string, intents []manifest.FilesystemIntent) (binds []Bind, closeAll func(), err error) {
	closeAll = func() {
		for _, b := range binds {
			b.Dir.Close()
		}
	}
	if len(intents) == 0 {
		return nil, func() {}, nil
	}
	if sandboxRoot == "" {
		sandboxRoot = intent.DefaultSandboxRoot
	}
	if !filepath.IsAbs(hostRoot) || filepath.Clean(hostRoot) != hostRoot {
		return nil, func() {}, errors.New("sandbox: the app's folder must be a clean absolute path")
	}
	if err := os.MkdirAll(hostRoot, 0o700); err != nil {
		return nil, func() {}, fmt.Errorf("sandbox: the app's folder: %w", err)
	}
	root, err := os.OpenRoot(hostRoot)
	if err != nil {
		return nil, func() {}, fmt.Errorf("sandbox: the app's folder: %w", err)
	}
	defer root.Close()
	h := intent.Host{SandboxRoot: sandboxRoot}
	for i, fi := range intents {
		at := fmt.Sprintf("filesystem_intents[%d]", i)
		if rule := intent.PathRule(fi.Path, h); rule != "" {
			closeAll()
			return nil, func() {}, fmt.Errorf("sandbox: %s.path: %s", at, rule)
		}
		if fi.Path == "/run/capgate" || strings.HasPrefix(fi.Path, "/run/capgate/") {
			closeAll()
			return nil, func() {}, fmt.Errorf("sandbox: %s.path: /run/capgate is the sandbox's own", at)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, sandboxRoot), "/")
		if rel == "" {
			rel = "."
		}
		dir, err := openBelow(root, rel)
		if err != nil {
			closeAll()
			return nil, func() {}, fmt.Errorf("sandbox: %s.path: its folder in the app's folder: %w", at, err)
		}
		binds = append(binds, Bind{Path: fi.Path, Dir: dir, Write: fi.Mode == manifest.ModeReadWrite})
	}
	return binds, closeAll, nil
}

// openBelow opens the folder rel below root, making the missing folders on the way, and
// refusing a symbolic link or a file anywhere on it.
func openBelow(root *os.Root, rel string) (*os.File, error) {
	if rel != "." {
		walked := ""
		for seg := range strings.SplitSeq(rel, "/") {
			walked = filepath.Join(walked, seg)
			fi, err := root.Lstat(walked)
			if errors.Is(err, fs.ErrNotExist) {
				if err := root.Mkdir(walked, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
					return nil, err
				}
				if fi, err = root.Lstat(walked); err != nil {
					return nil, err
				}
			} else if err != nil {
				return nil, err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return nil, errors.New("a symbolic link is on the way")
			}
			if !fi.IsDir() {
				return nil, errors.New("a file that is not a folder is on the way")
			}
		}
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return nil, errors.New("not a folder")
	}
	return f, nil
}
