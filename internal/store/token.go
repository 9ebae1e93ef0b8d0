package store

import (
	"errors"
	"fmt"
)

// TokenColumns are a token's columns in both schemas, in the order ScanToken reads them.
const TokenColumns = `id, client_id, parent_id, hash, issued_at, expires_at, max_uses, uses,
	revoked, revoked_at, audit_tag, body`

// TokenRow is a Token as its columns hold it: ParentID NULL for a root token, times as
// TimeCol has them, Body never nil.
type TokenRow struct {
	ID, ClientID        string
	ParentID            NullText
	Hash                string
	IssuedAt, ExpiresAt NullInt
	MaxUses, Uses       int64
	Revoked             bool
	RevokedAt           NullInt
	AuditTag            string
	Body                []byte
}

// TokenRowOf checks t as PutToken takes it and returns its columns: every time one TimeCol
// holds, MaxUses and Uses not negative. The error names the first field that is not.
func TokenRowOf(t Token) (TokenRow, error) {
	var ts times
	r := TokenRow{
		ID: t.ID, ClientID: t.ClientID, ParentID: Text(t.ParentID), Hash: t.Hash,
		IssuedAt:  ts.col("token.IssuedAt", t.IssuedAt),
		ExpiresAt: ts.col("token.ExpiresAt", t.ExpiresAt),
		MaxUses:   t.MaxUses, Uses: t.Uses, Revoked: t.Revoked,
		RevokedAt: ts.col("token.RevokedAt", t.RevokedAt),
		AuditTag:  t.AuditTag, Body: Blob(t.Body),
	}
	switch {
	case ts.err != nil:
		return TokenRow{}, ts.err
	case t.MaxUses < 0:
		return TokenRow{}, errors.New("token.MaxUses: must not be negative")
	case t.Uses < 0:
		return TokenRow{}, errors.New("token.Uses: must not be negative")
	}
	return r, nil
}

// ScanToken reads a row of TokenColumns.
func ScanToken(sc Scanner, n NullTypes) (Token, error) {
	var r TokenRow
	if err := sc.Scan(&r.ID, &r.ClientID, n.Text(&r.ParentID), &r.Hash, n.Int(&r.IssuedAt), n.Int(&r.ExpiresAt),
		&r.MaxUses, &r.Uses, &r.Revoked, n.Int(&r.RevokedAt), &r.AuditTag, &r.Body); err != nil {
		return Token{}, err
	}
	return Token{
		ID: r.ID, ClientID: r.ClientID, ParentID: r.ParentID.String, Hash: r.Hash,
		IssuedAt: r.IssuedAt.Time(), ExpiresAt: r.ExpiresAt.Time(),
		MaxUses: r.MaxUses, Uses: r.Uses, Revoked: r.Revoked, RevokedAt: r.RevokedAt.Time(),
		AuditTag: r.AuditTag, Body: r.Body,
	}, nil
}

// Use is what a check at use found of a token (CheckToken) or of its chain, the token and
// every ancestor (TakeUse): any of them revoked, expired or exhausted, the token's client
// disabled.
type Use struct {
	Revoked, ClientDisabled, Expired, Exhausted bool
}

// Err is the contract's answer to the use, nil when it may go ahead: the first of
// ErrRevoked, ErrClientDisabled, ErrExpired and ErrExhausted that applies, in that order (a
// revoked token is revoked whatever else it is; a disabled client's token works again once
// the client is enabled, so it must not be reported as used up). The sentinels come bare,
// for the callers on every call's path to wrap or not.
func (u Use) Err() error {
	switch {
	case u.Revoked:
		return ErrRevoked
	case u.ClientDisabled:
		return ErrClientDisabled
	case u.Expired:
		return ErrExpired
	case u.Exhausted:
		return ErrExhausted
	}
	return nil
}

// Exhausted reports whether a token allowed maxUses uses (0: no limit) has none left after
// uses.
func Exhausted(maxUses, uses int64) bool {
	return maxUses > 0 && uses >= maxUses
}

// ChainTooDeep is the error for a chain of ancestors longer than MaxTokenDepth, which only a
// corrupt store has.
func ChainTooDeep() error {
	return fmt.Errorf("token chain deeper than %d", MaxTokenDepth)
}
