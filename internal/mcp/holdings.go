package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// HandleMeta is the member of a tools/call request's _meta that names the held token the
// call uses, by the token_handle capgate__request_capability answered:
//
//	{"name": "files__write_file", "arguments": {...}, "_meta": {"capgate/token_handle": "cgh_..."}}
//
// Without it capgate picks the narrowest held token that covers the call. A handle only names
// a token: it is taken from the client it was issued to, authenticated by its own key, and
// from no one else.
const HandleMeta = "capgate/token_handle"

// handlePrefix starts every handle, so that one is never taken for a token or a key.
const handlePrefix = "cgh_"

// Recorder appends audit records (audit.Writer).
type Recorder interface {
	Append(ctx context.Context, rec audit.Record) (int64, error)
}

var _ Recorder = (*audit.Writer)(nil)

func newHandle() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return handlePrefix + hex.EncodeToString(b[:])
}

// validHandle reports whether s has a handle's form: the prefix and 32 lowercase hex digits.
func validHandle(s string) bool {
	rest, ok := strings.CutPrefix(s, handlePrefix)
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}

// hold keeps an issued token for the client in the store and returns its handle.
func (h *Handler) hold(ctx context.Context, client string, iss broker.Issued, grants []string, maxUses int64, constrained bool) (string, error) {
	hd := store.Holding{Handle: newHandle(), ClientID: client, TokenID: iss.ID, Wire: iss.Wire, Grants: grants,
		MaxUses: maxUses, Constrained: constrained, ExpiresAt: iss.ExpiresAt, Created: time.Now()}
	if err := h.o.Holdings.PutHolding(ctx, hd, MaxHeldTokens); err != nil {
		return "", err
	}
	return hd.Handle, nil
}

// drop forgets a held token the gateway no longer accepts (used up, expired, revoked).
func (h *Handler) drop(ctx context.Context, handle string) {
	if err := h.o.Holdings.DeleteHolding(context.WithoutCancel(ctx), handle); err != nil && !errors.Is(err, store.ErrNotFound) {
		h.o.Logger.Warn("mcp: forgetting a held token", "err", err)
	}
}

// covering returns the client's unexpired held tokens whose grants cover perm, narrowest
// first: a grant naming the permission exactly before a wildcard, fewer grants before more,
// a use limit before none, constrained before unconstrained, the sooner expiry first.
func (h *Handler) covering(ctx context.Context, client, perm string) ([]store.Holding, error) {
	all, err := h.held.list(ctx, h.o.Holdings, client, time.Now())
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(t store.Holding) bool { return !token.Covers(t.Grants, perm) })
	rank := func(b bool) int {
		if b {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b store.Holding) int {
		for _, d := range []int{
			rank(slices.Contains(a.Grants, perm)) - rank(slices.Contains(b.Grants, perm)),
			len(a.Grants) - len(b.Grants),
			rank(a.MaxUses > 0) - rank(b.MaxUses > 0),
			rank(a.Constrained) - rank(b.Constrained),
		} {
			if d != 0 {
				return d
			}
		}
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.Handle, b.Handle)
	})
	return out, nil
}

// handleOf is the handle a tools/call request names in its _meta, "" for none; ok is false
// when the member is there and not a handle.
func handleOf(req *mcpsdk.CallToolRequest) (string, bool) {
	v, there := req.Params.Meta[HandleMeta]
	if !there {
		return "", true
	}
	s, isStr := v.(string)
	if !isStr || !validHandle(s) {
		return "", false
	}
	return s, true
}

// named returns the held token a call names, for the caller only. A handle that is unknown,
// or held for another client, is a refusal, the same for both so that a handle's owner is not
// told; the second is audited, as anything presented that belongs to someone else.
func (h *Handler) named(ctx context.Context, caller broker.Caller, handle, what string) (store.Holding, *mcpsdk.CallToolResult) {
	hd, err := h.o.Holdings.GetHolding(ctx, handle)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Holding{}, refusal(policy.CodeInvalidToken, "no token with this handle is held for this client", nil)
	case err != nil:
		h.o.Logger.Error("mcp: reading a held token", "err", err)
		return store.Holding{}, refusal(codeFailed, "the held tokens could not be read", nil)
	case hd.ClientID != caller.ClientID:
		rec := audit.Record{Action: what, ClientID: caller.ClientID, Decision: string(policy.Deny), Code: policy.CodeInvalidToken,
			Result: "refused", Kind: "decision", Explanation: "a token handle held for another client was presented; it proves nothing and was refused"}
		if _, err := h.o.Audit.Append(context.WithoutCancel(ctx), rec); err != nil {
			h.o.Logger.Error("mcp: recording a refused handle", "err", err)
		}
		return store.Holding{}, refusal(policy.CodeInvalidToken, "no token with this handle is held for this client", nil)
	case !time.Now().Before(hd.ExpiresAt):
		return store.Holding{}, refusal(policy.CodeTokenExpired, "the token with this handle has expired", nil)
	}
	return hd, nil
}
