//go:build linux

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/storetest"
)

// openURing is a ring, or a skip where the kernel offers none (a failure under CI, whose
// machine has one).
func openURing(t *testing.T) *uring {
	t.Helper()
	u, err := newURing()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("io_uring is not available: %v", err)
		}
		t.Skipf("io_uring is not available here: %v", err)
	}
	t.Cleanup(u.close)
	return u
}

// A sync through the ring says what fdatasync says: nothing for a file, the kernel's error for
// what cannot be synced (a pipe: EINVAL), and again and again on one ring.
func TestURingDatasync(t *testing.T) {
	u := openURing(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 50 {
		if _, err := f.WriteAt([]byte("frame"), int64(i*5)); err != nil {
			t.Fatal(err)
		}
		if err := u.datasync(f); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := u.datasync(w); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a pipe synced through the ring: %v, want EINVAL as fdatasync says", err)
	}
	if err := u.datasync(f); err != nil {
		t.Fatalf("after an error: %v", err)
	}
	f.Close()
	if err := u.datasync(f); err == nil {
		t.Fatal("a closed file synced")
	}
}

// Batches of more than one call's records go through the ring; the log holds them all, across a
// crash, and with the ring turned off the same appends go through fdatasync.
func TestAuditLogSyncedThroughTheRing(t *testing.T) {
	openURing(t)
	saved := useURing
	t.Cleanup(func() { useURing = saved })
	for _, ring := range []bool{true, false} {
		useURing = ring
		path := filepath.Join(t.TempDir(), "capgate.db")
		a := openAt(t, path)
		var want []store.AuditEntry
		for i := range 20 {
			var h store.AuditEntry
			if len(want) > 0 {
				h = want[len(want)-1]
			}
			batch := storetest.EntriesAfter(h, 1+i%6, "r")
			if err := a.AppendAudit(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
			want = append(want, batch...)
		}
		a.alog.mu.Lock()
		used := a.alog.ring != nil
		a.alog.mu.Unlock()
		if used != ring {
			t.Errorf("with useURing %v the ring was used: %v", ring, used)
		}
		crash(t, a)
		wantLog(t, openAt(t, path), want)
	}
}

// A failure of the ring itself (here, a submission ring that seems full) is no failed sync:
// the append is synced with fdatasync, and the ring is not used again.
func TestAuditLogRingFailureFallsBack(t *testing.T) {
	openURing(t)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := storetest.EntriesAfter(store.AuditEntry{}, 3, "r")
	if err := a.AppendAudit(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	a.alog.mu.Lock()
	u := a.alog.ring
	if u == nil {
		a.alog.mu.Unlock()
		t.Fatal("no ring after a batch of three")
	}
	atomic.StoreUint32(u.sqTail, atomic.LoadUint32(u.sqHead)+u.sqMask+1)
	a.alog.mu.Unlock()
	more := storetest.EntriesAfter(want[2], 3, "s")
	if err := a.AppendAudit(t.Context(), more); err != nil {
		t.Fatalf("an append whose ring failed: %v", err)
	}
	a.alog.mu.Lock()
	ring, off := a.alog.ring, a.alog.noRing
	a.alog.mu.Unlock()
	if ring != nil || !off {
		t.Fatal("the failed ring is still used")
	}
	crash(t, a)
	wantLog(t, openAt(t, path), append(want, more...))
}
