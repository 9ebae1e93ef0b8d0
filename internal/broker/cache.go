package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/capgate/capgate/internal/readmap"
	"github.com/capgate/capgate/internal/revcache"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// The decision reads a token's state (revoked, expiry, uses) and the person's mandates on
// every call. Both change rarely, so the broker holds them in memory:
//
//   - every fill is tagged with the store revision of the last Sync, read before the fill's
//     own read (package revcache): a fill that read a token or the mandates before a change
//     and lands after Sync noticed it is dropped, never served;
//   - a change made by another process sharing the store (the CLI with --data, another
//     replica) raises the store's revision, and Sync, which the gateway runs every
//     SyncInterval, moves the cache's revision when it moved, so that every older fill misses;
//   - a change made through this broker (a revocation, a mandate) raises the store's
//     revision too, and the broker syncs at once after it; a use it takes updates the
//     cached count;
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
	digest    token.Digest // the issued token's, from its WireHash: a token with its id but another body is not it
	hashOK    bool         // the stored WireHash was one: a state without it matches no token
	revoked   bool
	expiresAt time.Time
	maxUses   int64
	uses      int64 // as last seen: the store's TakeUse is the authority
	consented bool  // the consent request it was issued under is approved
}

type cache struct {
	rev atomic.Int64 // the store revision of the last Sync: every fill is tagged with it

	// passed holds the texts that passed a schema, by schema, then by text: a call's params
	// (canonical) against their schema and a call's result against its returns schema (two
	// lookups of one word and of a string, cheaper than one of a key of both). The same bytes
	// against the same schema always get the same verdict. A schema is
	// immutable and a registry reload makes new ones, so an entry never goes stale. Lookups
	// take no lock (readmap); pmu orders the fills and counts them and their bytes.
	passed     readmap.Map[*manifest.Schema, readmap.Map[string, struct{}]]
	pmu        sync.Mutex
	passedN    int
	passedSize int

	tokens   revcache.Map[string, tokenState]
	mandates revcache.Value[[]store.Mandate]
	checked  checkedTokens
}

func newCache() *cache {
	c := &cache{}
	c.tokens.Max = maxCachedTokens
	return c
}

// Bounds of the remembered texts (params and results): entries and their bytes. A full set is
// emptied.
const (
	maxPassedTexts     = 4096
	maxPassedTextBytes = 4 << 20
	maxPassedTextLen   = 4096 // longer texts are checked every time
)

// textPassed reports whether text (a call's params or result) passed s before.
func (c *cache) textPassed(s *manifest.Schema, text []byte) bool {
	if len(text) > maxPassedTextLen {
		return false
	}
	texts, ok := c.passed.Load(s)
	if !ok {
		return false
	}
	// The key is the text's bytes, not a copy of them: the lookup keeps no key, and the
	// text is not changed while it runs.
	_, ok = texts.Load(unsafe.String(unsafe.SliceData(text), len(text)))
	return ok
}

// textPass remembers that text (a call's params or result) passed s.
func (c *cache) textPass(s *manifest.Schema, text []byte) {
	if len(text) > maxPassedTextLen {
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.passedN >= maxPassedTexts || c.passedSize+len(text) > maxPassedTextBytes {
		c.passed.Clear()
		c.passedN, c.passedSize = 0, 0
	}
	texts, ok := c.passed.Load(s)
	if !ok {
		texts = new(readmap.Map[string, struct{}])
		c.passed.Store(s, texts)
	}
	if _, had := texts.Load(string(text)); had {
		return
	}
	texts.Store(string(text), &struct{}{})
	c.passedN++
	c.passedSize += len(text)
}

// Sync reads the store's revision and, when a revocation, a mandate, a client or an app
// changed since the last Sync (in any process), moves the cache to it, so that nothing read
// before is served again, and checks the watched tokens. It returns the revision it saw.
func (b *Broker) Sync(ctx context.Context) (int64, error) {
	rev, err := b.o.Store.Revision(ctx)
	if err != nil {
		return 0, err
	}
	for {
		old := b.cache.rev.Load()
		if rev <= old {
			return old, nil
		}
		if b.cache.rev.CompareAndSwap(old, rev) {
			b.checkWatchedAll(ctx)
			return rev, nil
		}
	}
}

// changed follows a change this broker made in the store: a Sync, so that fills read before
// the change miss and watched tokens are checked; should the revision not be read, the
// cache is emptied and the watched tokens checked all the same.
func (b *Broker) changed(ctx context.Context) {
	if _, err := b.Sync(ctx); err != nil {
		b.cache.tokens.Clear()
		b.cache.mandates.Clear()
		b.checkWatchedAll(ctx)
	}
}

// Revision is the store revision of the last Sync: fronts that cache clients compare it.
func (b *Broker) Revision() int64 { return b.cache.rev.Load() }

// tokenState returns the token's state, from the cache or the store; the caller must not
// change it.
func (b *Broker) tokenState(ctx context.Context, id, consentID string) (*tokenState, error) {
	rev := b.cache.rev.Load()
	if ts, ok := b.cache.tokens.Ref(rev, id); ok {
		return ts, nil
	}
	st, err := b.o.Store.GetToken(ctx, id)
	if err != nil {
		return nil, err
	}
	digest, hashOK := token.ParseWireHash(st.Hash)
	ts := tokenState{digest: digest, hashOK: hashOK, revoked: st.Revoked, expiresAt: st.ExpiresAt, maxUses: st.MaxUses, uses: st.Uses}
	if consentID != "" {
		if c, err := b.o.Store.GetConsent(ctx, consentID); err == nil && c.State == store.ConsentApproved {
			ts.consented = true // an approved request stays approved
		}
	}
	b.cache.tokens.Put(rev, id, ts)
	return &ts, nil
}

// tookUse records a use the store granted, so that the next decision sees the count.
func (b *Broker) tookUse(id string, uses int64) {
	b.cache.tokens.Update(b.cache.rev.Load(), id, func(ts tokenState) tokenState {
		ts.uses = max(ts.uses, uses)
		return ts
	})
}

// forgetToken drops a token's cached state after the store refused it at use: the next
// decision reads it again.
func (b *Broker) forgetToken(id string) {
	b.cache.tokens.Delete(id)
	b.cache.forgetChecked(id)
}

// mandates returns the person's mandates, from the cache or the store.
func (b *Broker) mandates(ctx context.Context) ([]store.Mandate, error) {
	rev := b.cache.rev.Load()
	if ms, ok := b.cache.mandates.Get(rev); ok {
		return ms, nil
	}
	ms, err := b.o.Store.ListMandates(ctx)
	if err != nil {
		return nil, err
	}
	b.cache.mandates.Put(rev, ms)
	return ms, nil
}

// Revoke revokes the token and every token derived from it and syncs, so that the next
// decision in this process refuses them, and ends the work watching them.
func (b *Broker) Revoke(ctx context.Context, id string) error {
	err := b.o.Store.Revoke(ctx, id, b.o.Now())
	b.changed(ctx)
	return err
}

// PutMandate sets the person's mandate for a permission and syncs, so that the next
// decision sees it.
func (b *Broker) PutMandate(ctx context.Context, m store.Mandate) error {
	err := b.o.Store.PutMandate(ctx, m)
	b.changed(ctx)
	return err
}

// DeleteMandate removes the person's mandate for a permission (a missing one is
// store.ErrNotFound) and syncs, so that the next decision sees it gone.
func (b *Broker) DeleteMandate(ctx context.Context, permission string) error {
	err := b.o.Store.DeleteMandate(ctx, permission)
	b.changed(ctx)
	return err
}

// checkAtUse asks the store whether a root token without a use limit may still be used:
// not revoked, not expired, its client not disabled (store.Tokens.CheckToken: one small
// read). A store whose processes share a change counter (store.ChangeCounter: SQLite) is
// read only when the counter moved since the store last said yes for this token: until then
// no process has committed a change that could make the answer no, and only the token's own
// expiry can, which is checked here.
func (b *Broker) checkAtUse(ctx context.Context, tok token.Token, now time.Time) error {
	cc, counted := b.o.Store.(store.ChangeCounter)
	var n uint64
	if counted {
		n, counted = cc.Changes()
	}
	if counted && b.cache.checkedAt(tok.ID) == n+1 {
		if err := tok.CheckTime(now); err != nil {
			return store.ErrExpired
		}
		return nil
	}
	b.storeChecks.Add(1)
	// n was read before the store: a change committed after it moves the counter past it.
	err := b.o.Store.CheckToken(ctx, tok.ID, now)
	switch {
	case err == nil && counted:
		b.cache.setChecked(tok.ID, n+1)
	case errors.Is(err, store.ErrRevoked):
		b.forgetToken(tok.ID)
	}
	return err
}

// StoreChecksAtUse is how many times a check at use of a token without a use limit read the
// store, for metrics and tests (the others were answered by the change counter).
func (b *Broker) StoreChecksAtUse() int64 { return b.storeChecks.Load() }

// checkedTokens holds, per root token without a use limit, one more than the change
// counter's value at which the store last said it may be used (absent: never, or
// forgotten). It is read on every call's check at use, so it takes no lock to read
// (readmap). A full set is emptied: two callers filling it at once may take it a key past its
// bound before one of them empties it.
type checkedTokens = readmap.Map[string, uint64]

func (c *cache) checkedAt(id string) uint64 {
	if at, ok := c.checked.Load(id); ok {
		return *at
	}
	return 0
}

func (c *cache) setChecked(id string, at uint64) {
	if c.checked.Len() >= maxCachedTokens {
		c.checked.Clear()
	}
	c.checked.Store(id, &at)
}

func (c *cache) forgetChecked(id string) {
	c.checked.Delete(id)
}
