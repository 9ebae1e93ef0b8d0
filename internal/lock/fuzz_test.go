package lock_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/capgate/capgate/internal/lock"
)

// FuzzLoad: Load never panics, refuses only with *lock.Error, and whatever it accepts Saves
// back to bytes that Load to the same File: Encode is a fixed point.
func FuzzLoad(f *testing.F) {
	valid, err := lock.Encode(testFile(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/3])
	f.Add([]byte("{\n  \"lockfile_version\": 1,\n  \"plugins\": {}\n}\n"))
	f.Add([]byte(`{"lockfile_version":1,"plugins":{},"pending":{}}`))
	f.Add([]byte(`{"lockfile_version":2}`))
	f.Add([]byte(`{"lockfile_version":1,"plugins":{"a.b":{"app_id":"a.b","version":"1.0.0","digest":"","signer":"","tier":2,"manifest":{"app_id":"a.b","version":"1.0.0"},"installed_at":"2025-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"lockfile_version":1,"plugins":{"a.b":{"App_Id":1,"app_id":null}}}`))
	f.Add(bytes.Replace(valid, []byte(`"tier": 1`), []byte(`"tier": 1e0`), 1))
	f.Add(bytes.Replace(valid, []byte(`"since": "2025-03-02T08:30:00Z"`), []byte(`"since": "2025-03-02T08:30:00+01:00"`), 1))
	dir := f.TempDir()
	path := filepath.Join(dir, lock.FileName)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := lock.Load(dir)
		if err != nil {
			var le *lock.Error
			if !errors.As(err, &le) {
				t.Fatalf("Load refused with %T %v, not a *lock.Error", err, err)
			}
			return
		}
		enc, err := lock.Encode(got)
		if err != nil {
			t.Fatalf("Encode of a loaded lockfile: %v", err)
		}
		again, err := lock.Parse(enc)
		if err != nil {
			t.Fatalf("Parse of Encode: %v", err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("Parse(Encode(f)) != f")
		}
		if enc2, _ := lock.Encode(again); !bytes.Equal(enc2, enc) {
			t.Fatal("Encode is not a fixed point")
		}
	})
}
