package lock_test

import (
	"fmt"
	"os"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/manifest"
)

// Recording an install: parse the manifest, then add its entry under the lock.
func ExampleUpdate() {
	dir, _ := os.MkdirTemp("", "capgate")
	defer os.RemoveAll(dir)

	text, _ := jcs.Canonicalize([]byte(`{"app_id":"org.example.notes","version":"1.4.0","manifest_version":"1.0","capabilities":[]}`))
	doc, err := manifest.Parse(text)
	if err != nil {
		panic(err)
	}
	err = lock.Update(dir, func(f *lock.File) error {
		f.Plugins["org.example.notes"] = lock.Entry{
			AppID:       "org.example.notes",
			Version:     "1.4.0",
			Digest:      "sha256:0c4a4ab9cc398fbfd5cbbf1538a08b1d497602ed7100462d7365fc02aa710257",
			Tier:        2, // unsigned
			Manifest:    doc.Raw(),
			InstalledAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	f, _ := lock.Load(dir)
	fmt.Println(len(f.Plugins), f.Plugins["org.example.notes"].Version)

	// A broken entry is refused with where, never what.
	e := f.Plugins["org.example.notes"]
	e.Digest = "sha256:not-a-digest"
	f.Plugins[e.AppID] = e
	fmt.Println(lock.Save(dir, f))
	// Output:
	// 1 1.4.0
	// capgate.lock: plugins["org.example.notes"].digest: must be "sha256:" and 64 lowercase hex digits
}
