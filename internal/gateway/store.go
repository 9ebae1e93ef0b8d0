package gateway

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// ErrNoStore is returned by OpenStore when create is false and the data folder holds no
// SQLite store yet.
var ErrNoStore = errors.New("no capgate store")

// StoreKind says which implementation a store URL names.
type StoreKind int

// The stores.
const (
	SQLite   StoreKind = iota // the embedded default: one file, one machine
	Postgres                  // several replicas on one database
)

// ParseStore reads a store URL, as given to --store, $CAPGATE_STORE or store in the
// configuration file:
//
//	""                      SQLite in DATA/capgate.db (the default)
//	sqlite:PATH             SQLite in the file PATH (relative: to the data folder)
//	postgres://... , postgresql://...
//	                        PostgreSQL (a libpq connection URL: host, port, database, user,
//	                        password, sslmode, search_path, ...)
//
// It returns the kind and where: the SQLite file's path, or the PostgreSQL URL as given.
func ParseStore(dataDir, raw string) (StoreKind, string, error) {
	switch {
	case raw == "" || raw == "sqlite":
		return SQLite, filepath.Join(dataDir, DBFile), nil
	case strings.HasPrefix(raw, "sqlite:"):
		p := strings.TrimPrefix(raw, "sqlite:")
		if p == "" {
			return 0, "", errors.New("store: sqlite: wants a file path after the colon")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dataDir, p)
		}
		return SQLite, p, nil
	case hasPrefixFold(raw, "postgres://"), hasPrefixFold(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			// url's error quotes the input, password and all: say only where it is wrong.
			return 0, "", errors.New("store: not a valid postgres:// URL")
		}
		// A scheme is case-insensitive (RFC 3986); pgx knows it in lower case only.
		i := strings.Index(raw, "://")
		return Postgres, strings.ToLower(raw[:i]) + raw[i:], nil
	default:
		return 0, "", errors.New(`store: must be empty (SQLite in the data folder), "sqlite:PATH", or a postgres:// URL`)
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// DescribeStore names a store URL for people and logs, never with its password.
func DescribeStore(dataDir, raw string) string {
	kind, where, err := ParseStore(dataDir, raw)
	switch {
	case err != nil:
		return "an invalid store"
	case kind == SQLite:
		return "SQLite " + where
	}
	u, err := url.Parse(where)
	if err != nil {
		return "PostgreSQL"
	}
	u.User = url.User(u.User.Username())
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return "PostgreSQL " + u.String()
}

// OpenStore opens the store raw names (ParseStore) for the data folder dataDir. With create
// false, a SQLite store that does not exist yet is ErrNoStore, so that a command run on the
// wrong folder does not leave an empty database behind; PostgreSQL stores are always opened
// (their schema is made on first use).
func OpenStore(ctx context.Context, dataDir, raw string, create bool) (store.Store, error) {
	kind, where, err := ParseStore(dataDir, raw)
	if err != nil {
		return nil, err
	}
	if kind == Postgres {
		return postgres.Open(ctx, where)
	}
	if !create {
		if _, err := os.Stat(where); err != nil {
			return nil, fmt.Errorf("%w in %s", ErrNoStore, where)
		}
	}
	return sqlite.Open(ctx, where)
}

// identityApp is the state namespace where the gateway pins the keys of the data folder that
// first served the store.
const identityApp = "capgate.gateway"

// pinIdentity records the public halves of the gateway key and the local app key in the
// store on first use, and refuses a store pinned to other keys. Replicas on one database must
// share both keys (they sign and verify one another's tokens, checkpoints and built-in
// manifests); a replica started on a fresh data folder would otherwise quietly issue tokens
// that the others refuse and register the built-in apps under a key they do not trust.
func pinIdentity(ctx context.Context, st store.State, name string, pub ed25519.PublicKey, keyPath string) error {
	got, err := st.GetState(ctx, identityApp, name)
	if errors.Is(err, store.ErrNotFound) {
		// Insert if absent: of two first starts at the same moment with other keys, one
		// pins its key and the other finds it pinned and refuses.
		if err := st.CreateState(ctx, identityApp, name, pub); err != nil && !errors.Is(err, store.ErrExists) {
			return fmt.Errorf("gateway: pin the %s: %w", name, err)
		}
		got, err = st.GetState(ctx, identityApp, name)
	}
	if err != nil {
		return fmt.Errorf("gateway: read the pinned %s: %w", name, err)
	}
	if !bytes.Equal(got, pub) {
		return fmt.Errorf("gateway: this store was first served with another %s (%s); this data folder's is %s (%s). "+
			"Every replica on one store must use the same keys: copy %s, %s and %s/ from a data folder that serves this store, or give every replica the same --data",
			name, fingerprint(got), fingerprint(pub), keyPath, KeyFile, AppKeyFile, LocalTrustDir)
	}
	return nil
}

// fingerprint is a short, stable name for a public key.
func fingerprint(pub []byte) string {
	sum := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(sum[:8])
}
