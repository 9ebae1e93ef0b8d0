package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// The decision reads a token's state (revoked, expiry, uses) and the person's mandates on
// every call. Both change rarely, so the broker holds them in memory:
//
//   - a change made through this broker (a revocation, a use taken) updates the cache at once;
//   - a change made by another process sharing the store (the CLI with --data, another
//     replica) raises the store's revision, and Sync, which the gateway runs every
//     SyncInterval, drops the cache when it moved;
//   - a call never relies on the cache alone: when the decision allows it, the token is
//     checked against the store at use (TakeUse, or a read for a token without a use
//     limit), so a revocation by another process stops the next call even before Sync
//     sees it. Only Explain, which runs nothing, may answer from a cache one Sync old.

// SyncInterval is how often the gateway should run Sync.
const SyncInterval = 200 * time.Millisecond

// maxCachedTokens bounds the token cache; a full cache is emptied and refilled on demand.
const maxCachedTokens = 1 << 16

// tokenState is what the decision needs of a token's stored state.
type tokenState struct {
	hash      string // the issued token's WireHash: a token with its id but another body is not it
	revoked   bool
	expiresAt time.Time
	maxUses   int64
	uses      int64 // as last seen: the store's TakeUse is the authority
	consented bool  // the consent request it was issued under is approved
}

type cache struct {
	rev atomic.Int64 // the store revision the cache was filled at

	// passed holds params that passed their schema, by schema and canonical text. A schema
	// is immutable and a registry reload makes new ones, so an entry never goes stale.
	pmu        sync.RWMutex
	passed     map[paramsKey]struct{}
	passedSize int

	mu       sync.RWMutex
	tokens   map[string]tokenState
	mandates []store.Mandate
	haveMand bool
}

func newCache() *cache {
	return &cache{tokens: map[string]tokenState{}, passed: map[paramsKey]struct{}{}}
}

type paramsKey struct {
	schema *manifest.Schema
	params string
}

// Bounds of the remembered params: entries and their bytes. A full set is emptied.
const (
	maxPassedParams      = 4096
	maxPassedParamsBytes = 4 << 20
	maxPassedParamsLen   = 4096 // longer params are checked every time
)

func (c *cache) paramsPassed(s *manifest.Schema, params []byte) bool {
	if len(params) > maxPassedParamsLen {
		return false
	}
	c.pmu.RLock()
	_, ok := c.passed[paramsKey{s, string(params)}]
	c.pmu.RUnlock()
	return ok
}

func (c *cache) paramsPass(s *manifest.Schema, params []byte) {
	if len(params) > maxPassedParamsLen {
		return
	}
	c.pmu.Lock()
	if len(c.passed) >= maxPassedParams || c.passedSize+len(params) > maxPassedParamsBytes {
		c.passed, c.passedSize = map[paramsKey]struct{}{}, 0
	}
	c.passed[paramsKey{s, string(params)}] = struct{}{}
	c.passedSize += len(params)
	c.pmu.Unlock()
}

// drop forgets everything.
func (c *cache) drop() {
	c.mu.Lock()
	c.tokens = map[string]tokenState{}
	c.mandates, c.haveMand = nil, false
	c.mu.Unlock()
}

// Sync compares the store's revision with the one the cache was filled at and drops the
// cache when another process changed a revocation, a mandate, a client or an app. It
// returns the revision it saw.
func (b *Broker) Sync(ctx context.Context) (int64, error) {
	rev, err := b.o.Store.Revision(ctx)
	if err != nil {
		return 0, err
	}
	if old := b.cache.rev.Load(); rev != old {
		b.cache.drop()
		b.cache.rev.Store(rev)
		b.checkWatchedAll(ctx)
	}
	return rev, nil
}

// Revision is the store revision of the last Sync: fronts that cache clients compare it.
func (b *Broker) Revision() int64 { return b.cache.rev.Load() }

// tokenState returns the token's state, from the cache or the store.
func (b *Broker) tokenState(ctx context.Context, id, consentID string) (tokenState, error) {
	b.cache.mu.RLock()
	ts, ok := b.cache.tokens[id]
	b.cache.mu.RUnlock()
	if ok {
		return ts, nil
	}
	st, err := b.o.Store.GetToken(ctx, id)
	if err != nil {
		return tokenState{}, err
	}
	ts = tokenState{hash: st.Hash, revoked: st.Revoked, expiresAt: st.ExpiresAt, maxUses: st.MaxUses, uses: st.Uses}
	if consentID != "" {
		if c, err := b.o.Store.GetConsent(ctx, consentID); err == nil && c.State == store.ConsentApproved {
			ts.consented = true // an approved request stays approved
		}
	}
	b.cache.mu.Lock()
	if len(b.cache.tokens) >= maxCachedTokens {
		b.cache.tokens = map[string]tokenState{}
	}
	b.cache.tokens[id] = ts
	b.cache.mu.Unlock()
	return ts, nil
}

// tookUse records a use the store granted, so that the next decision sees the count.
func (b *Broker) tookUse(id string, uses int64) {
	b.cache.mu.Lock()
	if ts, ok := b.cache.tokens[id]; ok && uses > ts.uses {
		ts.uses = uses
		b.cache.tokens[id] = ts
	}
	b.cache.mu.Unlock()
}

// forgetToken drops a token's cached state after the store refused it at use: the next
// decision reads it again.
func (b *Broker) forgetToken(id string) {
	b.cache.mu.Lock()
	delete(b.cache.tokens, id)
	b.cache.mu.Unlock()
}

// mandates returns the person's mandates, from the cache or the store.
func (b *Broker) mandates(ctx context.Context) ([]store.Mandate, error) {
	b.cache.mu.RLock()
	ms, ok := b.cache.mandates, b.cache.haveMand
	b.cache.mu.RUnlock()
	if ok {
		return ms, nil
	}
	ms, err := b.o.Store.ListMandates(ctx)
	if err != nil {
		return nil, err
	}
	b.cache.mu.Lock()
	b.cache.mandates, b.cache.haveMand = ms, true
	b.cache.mu.Unlock()
	return ms, nil
}

// Revoke revokes the token and every token derived from it, and drops the cached token
// states, so that the next decision in this process refuses them.
func (b *Broker) Revoke(ctx context.Context, id string) error {
	err := b.o.Store.Revoke(ctx, id, b.o.Now())
	b.cache.mu.Lock()
	b.cache.tokens = map[string]tokenState{}
	b.cache.mu.Unlock()
	b.checkWatchedAll(ctx)
	return err
}

// PutMandate sets the person's mandate for a permission and drops the cached mandates.
func (b *Broker) PutMandate(ctx context.Context, m store.Mandate) error {
	err := b.o.Store.PutMandate(ctx, m)
	b.dropMandates()
	return err
}

// DeleteMandate removes the person's mandate for a permission (a missing one is
// store.ErrNotFound) and drops the cached mandates, so that the next decision sees it gone.
func (b *Broker) DeleteMandate(ctx context.Context, permission string) error {
	err := b.o.Store.DeleteMandate(ctx, permission)
	b.dropMandates()
	return err
}

func (b *Broker) dropMandates() {
	b.cache.mu.Lock()
	b.cache.mandates, b.cache.haveMand = nil, false
	b.cache.mu.Unlock()
}

// checkAtUse asks the store whether a root token without a use limit may still be used:
// not revoked and not expired (store.Tokens.CheckToken: one small read).
func (b *Broker) checkAtUse(ctx context.Context, id string, now time.Time) error {
	err := b.o.Store.CheckToken(ctx, id, now)
	if errors.Is(err, store.ErrRevoked) {
		b.forgetToken(id)
	}
	return err
}
