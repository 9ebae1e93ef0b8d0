package web

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// A login link made outside the gateway's process (capgate ui link, for the person at the
// machine: whoever can read the data folder's store) is kept in the store, as the SHA-256 of
// its secret and its expiry, so that any replica's page takes it. Spending it is an
// insert-if-absent of a second key (store.State.CreateState): of two browsers racing with one
// link, one signs in.

// loginApp is the store's state namespace of stored login links.
const loginApp = "capgate.web"

const (
	loginPrefix = "login/" // + hex SHA-256 of the secret: the expiry, Unix milliseconds
	spentPrefix = "spent/" // + the same: written once, when the link is spent
)

// StoreLoginLink makes a one-time login link that works on the page of any gateway on st for
// LoginTTL, and returns its path, "/ui/login?t=SECRET" (print it only where the person alone
// reads it). Links that expired are removed on the way.
func StoreLoginLink(ctx context.Context, st store.State, now time.Time) (string, error) {
	if err := dropStoredLinks(ctx, st, now); err != nil {
		return "", err
	}
	t := randomToken()
	k := key(t)
	exp := now.Add(LoginTTL).UnixMilli()
	if err := st.CreateState(ctx, loginApp, loginPrefix+hex.EncodeToString(k[:]), []byte(strconv.FormatInt(exp, 10))); err != nil {
		return "", fmt.Errorf("web: store the login link: %w", err)
	}
	return "/ui/login?t=" + t, nil
}

// spendStoredLink spends a stored login link: true once, for a link the store holds that has
// not expired and was not spent.
func spendStoredLink(ctx context.Context, st store.State, t string, now time.Time) bool {
	if st == nil || t == "" || len(t) > 2*tokenBytes {
		return false
	}
	k := key(t)
	h := hex.EncodeToString(k[:])
	v, err := st.GetState(ctx, loginApp, loginPrefix+h)
	if err != nil {
		return false
	}
	exp, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || now.UnixMilli() >= exp {
		return false
	}
	if err := st.CreateState(ctx, loginApp, spentPrefix+h, []byte(strconv.FormatInt(now.UnixMilli(), 10))); err != nil {
		return false // spent already, or the store said no: no session either way
	}
	_ = st.PutState(ctx, loginApp, loginPrefix+h, nil)
	return true
}

// dropStoredLinks removes the stored links that expired, and the marks of spent ones older
// than a link lives.
func dropStoredLinks(ctx context.Context, st store.State, now time.Time) error {
	var errs []error
	for _, prefix := range []string{loginPrefix, spentPrefix} {
		m, err := st.ListState(ctx, loginApp, prefix)
		if err != nil {
			return fmt.Errorf("web: stored login links: %w", err)
		}
		for k, v := range m {
			at, err := strconv.ParseInt(string(v), 10, 64)
			if prefix == spentPrefix {
				at += LoginTTL.Milliseconds()
			}
			if err != nil || now.UnixMilli() >= at {
				errs = append(errs, st.PutState(ctx, loginApp, k, nil))
			}
		}
	}
	return errors.Join(errs...)
}
