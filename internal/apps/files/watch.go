package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EventChanged is the event the app emits for a change in its folder: a file or folder
// created, modified or removed.
const EventChanged = "file.changed"

// Change is one change found between two Snapshots of the folder, the payload of the event
// file.changed: the path is relative to the folder, with forward slashes.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"change"` // created, modified or removed
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
}

// ID names the change: the same change seen twice (by two replicas sharing the folder, say)
// has the same id.
func (c Change) ID(at Stat) string {
	h := sha256.Sum256([]byte(c.Path + "\x00" + c.Kind + "\x00" + strconv.FormatInt(at.ModNano, 10) + "\x00" + strconv.FormatInt(at.Size, 10)))
	return "files:" + hex.EncodeToString(h[:16])
}

// Stat is what a Snapshot keeps of one entry.
type Stat struct {
	Dir     bool
	Size    int64
	ModNano int64
}

// Snapshot is the folder's entries by relative path, as Scan found them.
type Snapshot map[string]Stat

// ErrTooManyEntries is a folder with more entries than a scan reads: its changes are not
// watched (the rest of the app works as before).
var ErrTooManyEntries = errors.New("files: the folder holds more entries than a watch scans")

// Scan reads the folder root's entries, at most max of them (MaxWatchEntries when max is 0
// or less), without following symbolic links. An entry that cannot be read is left out.
func Scan(root string, max int) (Snapshot, error) {
	if max <= 0 {
		max = MaxWatchEntries
	}
	snap := Snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if p == root {
			return nil
		}
		if len(snap) >= max {
			return ErrTooManyEntries
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		st := Stat{Dir: d.IsDir(), ModNano: info.ModTime().UnixNano()}
		if !st.Dir {
			st.Size = info.Size()
		}
		snap[filepath.ToSlash(rel)] = st
		return nil
	})
	return snap, err
}

// Found is a change and the Stat that names it (after's, or before's for a removal).
type Found struct {
	Change
	Stat Stat
}

// Diff lists the changes from before to after, ordered by path.
func Diff(before, after Snapshot) []Found {
	var out []Found
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, Found{Change{Path: p, Kind: "created", Dir: a.Dir, Size: a.Size}, a})
		case !a.Dir && (a.ModNano != b.ModNano || a.Size != b.Size):
			out = append(out, Found{Change{Path: p, Kind: "modified", Size: a.Size}, a})
		}
	}
	for p, b := range before {
		if _, ok := after[p]; !ok {
			out = append(out, Found{Change{Path: p, Kind: "removed", Dir: b.Dir}, b})
		}
	}
	slices.SortFunc(out, func(x, y Found) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// WatchInterval is how often the host scans the folder while a trigger watches it.
const WatchInterval = 2 * time.Second
