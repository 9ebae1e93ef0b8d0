package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUseOrder checks every combination of refusals: the first of revoked, client disabled,
// expired and exhausted wins, and nothing refused is nil.
func TestUseOrder(t *testing.T) {
	for bits := range 16 {
		u := Use{Revoked: bits&1 != 0, ClientDisabled: bits&2 != 0, Expired: bits&4 != 0, Exhausted: bits&8 != 0}
		var want error
		switch {
		case u.Revoked:
			want = ErrRevoked
		case u.ClientDisabled:
			want = ErrClientDisabled
		case u.Expired:
			want = ErrExpired
		case u.Exhausted:
			want = ErrExhausted
		}
		if got := u.Err(); got != want {
			t.Errorf("%+v: Err() = %v, want %v", u, got, want)
		}
	}
}

func TestExhausted(t *testing.T) {
	for _, tc := range []struct {
		max, uses int64
		want      bool
	}{
		{0, 0, false}, {0, 1 << 62, false}, // no limit
		{1, 0, false}, {1, 1, true}, {1, 2, true},
		{3, 2, false}, {3, 3, true},
	} {
		if got := Exhausted(tc.max, tc.uses); got != tc.want {
			t.Errorf("Exhausted(%d, %d) = %v, want %v", tc.max, tc.uses, got, tc.want)
		}
	}
}

func TestTokenRowOf(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("X", 3600))
	r, err := TokenRowOf(Token{ID: "tk", IssuedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.ParentID.Valid || r.ExpiresAt.Valid || r.RevokedAt.Valid || !r.IssuedAt.Valid || r.Body == nil {
		t.Errorf("root token's row: %+v", r)
	}
	r, err = TokenRowOf(Token{ID: "tk", ParentID: "p"})
	if err != nil || r.ParentID != (NullText{String: "p", Valid: true}) {
		t.Errorf("derived token's row: %+v, %v", r, err)
	}
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		tok   Token
		field string
	}{
		{Token{MaxUses: -1}, "token.MaxUses"},
		{Token{Uses: -1}, "token.Uses"},
		{Token{IssuedAt: far}, "token.IssuedAt"},
		{Token{ExpiresAt: far}, "token.ExpiresAt"},
		{Token{RevokedAt: far, Revoked: true}, "token.RevokedAt"},
		{Token{IssuedAt: far, MaxUses: -1}, "token.IssuedAt"}, // the first problem
	} {
		_, err := TokenRowOf(tc.tok)
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") {
			t.Errorf("TokenRowOf(%+v) = %v, want an error naming %s", tc.tok, err, tc.field)
		}
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrConflict) {
			t.Errorf("TokenRowOf(%+v): a bad argument is no sentinel: %v", tc.tok, err)
		}
	}
}
