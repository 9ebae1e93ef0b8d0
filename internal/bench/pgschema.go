package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// benchSchema makes a schema of its own for a run in the PostgreSQL database raw names, so that
// a run never touches an operator's tables, and returns the URL that selects it (search_path)
// and a function that drops it.
func benchSchema(ctx context.Context, raw string) (string, func(), error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, errors.New("bench: the store is not a valid postgres:// URL")
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	name := "capgate_bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return "", nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, fmt.Errorf("bench: create schema %s: %w", name, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, raw)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
	}
	return u.String(), drop, nil
}
