package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "folder")
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("one"), 0o600, 0o700, false); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", st.Mode().Perm())
	}
	if err := Write(path, []byte("two"), 0o600, 0o700, false); !errors.Is(err, ErrExists) {
		t.Fatalf("second Write without overwrite = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("content replaced: %q", b)
	}
	if err := Write(path, []byte("two"), 0o644, 0o700, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Fatalf("content = %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// Of many writers racing to create one file, exactly one wins.
func TestCreateRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Write(path, []byte{byte(i)}, 0o600, 0o700, false); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d writers won", wins)
	}
}
