package token

import (
	"time"
)

// CheckTime returns nil when now is within the token's life: ErrExpired from expires_at on,
// ErrNotYetValid before issued_at. Times are compared in whole Unix seconds, as the token
// states them.
func (t *Token) CheckTime(now time.Time) error {
	s := now.Unix()
	switch {
	case s >= t.ExpiresAt:
		return ErrExpired
	case s < t.IssuedAt:
		return ErrNotYetValid
	}
	return nil
}

// CheckClient returns nil when the token is bound to clientID, else ErrWrongClient. An empty
// client matches nothing, not even a token with an empty client_id.
func (t *Token) CheckClient(clientID string) error {
	if clientID == "" || t.ClientID != clientID {
		return ErrWrongClient
	}
	return nil
}
