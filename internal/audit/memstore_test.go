package audit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/capgate/capgate/internal/store"
)

// memAudit is an in-memory store.Audit that keeps the interface's contract to the letter:
// AppendAudit is all or none and refuses, with store.ErrConflict, a batch that does not
// continue the head or whose entries do not follow one another; a missing head is
// store.ErrNotFound; a checkpointed seq is store.ErrExists; everything is copied in and out,
// so a caller can never change what was stored. Tests that tamper reach into entries and
// checkpoints directly, as an attacker with the database file would.
type memAudit struct {
	mu          sync.Mutex
	entries     []store.AuditEntry
	checkpoints []store.Checkpoint
}

var _ store.Audit = (*memAudit)(nil)

func cloneEntry(e store.AuditEntry) store.AuditEntry {
	e.Body = slices.Clone(e.Body)
	return e
}

func (m *memAudit) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var prev store.AuditEntry // zero: Seq 0, Hash "" for an empty log
	if n := len(m.entries); n > 0 {
		prev = m.entries[n-1]
	}
	for i, e := range entries {
		if e.Seq != prev.Seq+1 || e.PrevHash != prev.Hash {
			return fmt.Errorf("append entry %d (seq %d) after seq %d: %w", i, e.Seq, prev.Seq, store.ErrConflict)
		}
		prev = e
	}
	for _, e := range entries {
		m.entries = append(m.entries, cloneEntry(e))
	}
	return nil
}

func (m *memAudit) AuditHead(ctx context.Context) (store.AuditEntry, error) {
	if err := ctx.Err(); err != nil {
		return store.AuditEntry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.entries) == 0 {
		return store.AuditEntry{}, fmt.Errorf("audit head: %w", store.ErrNotFound)
	}
	return cloneEntry(m.entries[len(m.entries)-1]), nil
}

// AuditRange returns matching entries in the order they are held, which is seq order unless
// a test reordered them to play a broken or hostile store.
func (m *memAudit) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.AuditEntry
	for _, e := range m.entries {
		if e.Seq < from || (to != 0 && e.Seq > to) {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, cloneEntry(e))
	}
	return out, nil
}

func (m *memAudit) PutCheckpoint(ctx context.Context, c store.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, found := slices.BinarySearchFunc(m.checkpoints, c.Seq, func(x store.Checkpoint, seq int64) int {
		return int(x.Seq - seq)
	})
	if found {
		return fmt.Errorf("checkpoint %d: %w", c.Seq, store.ErrExists)
	}
	c.Body = slices.Clone(c.Body)
	m.checkpoints = slices.Insert(m.checkpoints, i, c)
	return nil
}

func (m *memAudit) Checkpoints(ctx context.Context) ([]store.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Checkpoint, len(m.checkpoints))
	for i, c := range m.checkpoints {
		c.Body = slices.Clone(c.Body)
		out[i] = c
	}
	return out, nil
}
