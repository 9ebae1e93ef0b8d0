package lock_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/lock"
)

// addEntry is the change every concurrent updater makes: one new plugin entry.
func addEntry(t testing.TB, dir, id string) error {
	e := testEntry(t, id, "1.0.0", 1)
	return lock.Update(dir, func(f *lock.File) error {
		if _, ok := f.Plugins[id]; ok {
			return fmt.Errorf("%s already present", id)
		}
		f.Plugins[id] = e
		return nil
	})
}

// TestHelperUpdater runs in a child process: it adds its own entries one Update at a time.
func TestHelperUpdater(t *testing.T) {
	helperMode(t, "updater")
	dir, id := os.Getenv(helperDir), os.Getenv(helperID)
	n, _ := strconv.Atoi(os.Getenv(helperN))
	for i := range n {
		if err := addEntry(t, dir, fmt.Sprintf("test.%s.n%d", id, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// Several processes and several goroutines updating at once lose no change.
func TestUpdateConcurrent(t *testing.T) {
	const procs, goroutines, n = 3, 4, 15
	dir := filepath.Join(t.TempDir(), "data")
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helperCommand(t, "TestHelperUpdater", helperEnv+"=updater", helperDir+"="+dir,
			helperID+"="+fmt.Sprintf("proc%d", p), helperN+"="+strconv.Itoa(n))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*n)
	for g := range goroutines {
		wg.Go(func() {
			for i := range n {
				if err := addEntry(t, dir, fmt.Sprintf("test.goroutine%d.n%d", g, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	f, err := lock.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(f.Plugins), (procs+goroutines)*n; got != want {
		t.Errorf("%d entries, want %d: changes were lost", got, want)
	}
	for p := range procs {
		for i := range n {
			if _, ok := f.Plugins[fmt.Sprintf("test.proc%d.n%d", p, i)]; !ok {
				t.Errorf("entry %d of process %d lost", i, p)
			}
		}
	}
}

func TestUpdateFnError(t *testing.T) {
	dir := t.TempDir()
	if err := lock.Save(dir, testFile(t)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, lock.FileName)
	before, _ := os.ReadFile(path)
	unchanged := func(t *testing.T) {
		t.Helper()
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("the file changed")
		}
	}

	sentinel := errors.New("reviewer said no")
	err := lock.Update(dir, func(f *lock.File) error {
		delete(f.Plugins, "org.example.notes")
		f.Plugins["org.example.new"] = testEntry(t, "org.example.new", "1.0.0", 1)
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	unchanged(t)

	// fn leaves the lockfile invalid: Save refuses, nothing is written.
	err = lock.Update(dir, func(f *lock.File) error {
		e := f.Plugins["org.example.notes"]
		e.Digest = "md5:0"
		f.Plugins[e.AppID] = e
		return nil
	})
	var le *lock.Error
	if !errors.As(err, &le) || le.Field != "digest" || le.Entry != "org.example.notes" {
		t.Fatalf("Update = %v, want a digest error", err)
	}
	unchanged(t)

	// fn panics: the lock is released and the file untouched.
	func() {
		defer func() { recover() }()
		lock.Update(dir, func(f *lock.File) error {
			f.Plugins = nil
			panic("boom")
		})
	}()
	unchanged(t)
	if err := addEntry(t, dir, "org.example.after"); err != nil {
		t.Fatalf("Update after a panic: %v", err)
	}
}

// Update on a corrupt lockfile fails without calling fn or rewriting the file.
func TestUpdateCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, lock.FileName)
	if err := os.WriteFile(path, []byte(`{"lockfile_version":1,"plugins":{`), 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	if err := lock.Update(dir, func(*lock.File) error { called = true; return nil }); err == nil || called {
		t.Fatalf("Update = %v, fn called %v", err, called)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"lockfile_version":1,"plugins":{` {
		t.Fatal("a corrupt lockfile was rewritten")
	}
}
