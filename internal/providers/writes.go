package providers

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/manifest"
)

// MaxScannedEntries bounds the entries capgate looks at in a provider's read_write folders to
// see whether a call wrote there: past it, it does not know, and says nothing.
const MaxScannedEntries = 10_000

// treeStamp sums up the read_write folders of a provider: how many entries, their sizes and
// their latest change. Any write there, a file made, changed, renamed or removed, changes it.
type treeStamp struct {
	entries, bytes int64
	latest         int64 // the latest modification or status change, in ns
	known          bool
}

// writableFolders are the host folders behind a provider's read_write filesystem intents.
func writableFolders(cfg Config) []string {
	if cfg.AppFolder == "" {
		return nil
	}
	root := cfg.SandboxRoot
	if root == "" {
		root = intent.DefaultSandboxRoot
	}
	var out []string
	for _, fi := range cfg.Intents {
		if fi.Mode != manifest.ModeReadWrite {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, root), "/")
		out = append(out, filepath.Join(cfg.AppFolder, filepath.FromSlash(rel)))
	}
	return out
}

// stampOf sums up folders, without following links.
func stampOf(folders []string) treeStamp {
	s := treeStamp{known: true}
	for _, dir := range folders {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			s.entries++
			if s.entries > MaxScannedEntries {
				return fs.SkipAll
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			s.bytes += fi.Size()
			if t := fi.ModTime().UnixNano(); t > s.latest {
				s.latest = t
			}
			if t := changeTime(fi); t > s.latest {
				s.latest = t
			}
			return nil
		})
		if err != nil || s.entries > MaxScannedEntries {
			return treeStamp{}
		}
	}
	return s
}
