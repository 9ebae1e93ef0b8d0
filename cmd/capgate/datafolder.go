package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/store"
)

// localStore opens the gateway's store directly (--data and --store, else as configured),
// beside a running gateway: SQLite in WAL mode and PostgreSQL both let them share it.
func (g *globals) localStore(ctx context.Context, flag string) (store.Store, string, error) {
	return g.openStore(ctx, flag, false)
}

// openStore opens the store of the data folder flag names, creating a SQLite one when create
// is set; without it, a folder that holds no store yet is an error that says what to run.
func (g *globals) openStore(ctx context.Context, flag string, create bool) (store.Store, string, error) {
	l, err := g.load(hostFlags{dataDir: flag})
	if err != nil {
		return nil, "", err
	}
	dir := l.dataDir
	if dir == "" {
		return nil, "", usageErr("no data folder: set --data, CAPGATE_DATA_DIR or data_dir")
	}
	if _, _, err := gateway.ParseStore(dir, l.store); err != nil {
		return nil, "", usageErr("--store: %w", err)
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", err
		}
	}
	st, err := gateway.OpenStore(ctx, dir, l.store, create)
	if errors.Is(err, gateway.ErrNoStore) {
		return nil, "", &exitError{code: exitNo, err: fmt.Errorf("%w (run capgate serve --data %s first)", err, dir)}
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", gateway.DescribeStore(dir, l.store), err)
	}
	return st, dir, nil
}

// onStore runs fn on the data folder's store (localStore: --data and --store, beside a
// running gateway), closing it after.
func (g *globals) onStore(data string, fn func(ctx context.Context, st store.Store) error) error {
	ctx := context.Background()
	st, _, err := g.localStore(ctx, data)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(ctx, st)
}

// onStoreIfAny runs fn on the store of the data folder dir when it has one (a gateway ran on
// it), and does nothing when it has none.
func (g *globals) onStoreIfAny(dir string, fn func(ctx context.Context, st store.Store) error) error {
	l, err := g.load(hostFlags{dataDir: dir})
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := gateway.OpenStore(ctx, dir, l.store, false)
	if errors.Is(err, gateway.ErrNoStore) {
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(ctx, st)
}
