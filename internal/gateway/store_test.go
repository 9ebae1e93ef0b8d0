package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/keys"
)

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		kind  StoreKind
		where string
	}{
		{"", SQLite, "/data/capgate.db"},
		{"sqlite", SQLite, "/data/capgate.db"},
		{"sqlite:other.db", SQLite, "/data/other.db"},
		{"sqlite:/var/lib/capgate/c.db", SQLite, "/var/lib/capgate/c.db"},
		{"postgres://u:pw@db:5432/capgate", Postgres, "postgres://u:pw@db:5432/capgate"},
		{"postgresql://db/capgate?sslmode=require", Postgres, "postgresql://db/capgate?sslmode=require"},
		{"PostgreSQL://db/Capgate", Postgres, "postgresql://db/Capgate"},
	} {
		kind, where, err := ParseStore("/data", tc.raw)
		if err != nil || kind != tc.kind || where != tc.where {
			t.Errorf("ParseStore(%q) = %v %q %v, want %v %q", tc.raw, kind, where, err, tc.kind, tc.where)
		}
	}
	for _, raw := range []string{"sqlite:", "mysql://db/x", "postgres:/db", "host=db dbname=x", "postgres://u:se%cret@db", "/tmp/x.db"} {
		_, _, err := ParseStore("/data", raw)
		if err == nil {
			t.Errorf("ParseStore(%q): no error", raw)
			continue
		}
		if strings.Contains(err.Error(), "se%cret") {
			t.Errorf("ParseStore(%q): the error repeats the password: %v", raw, err)
		}
	}
}

func TestDescribeStoreHidesPasswords(t *testing.T) {
	for _, raw := range []string{
		"postgres://capgate:hunter2@db:5432/capgate?sslmode=require",
		"postgres://capgate@db/capgate?password=hunter2",
		"postgres://capgate@db/capgate?PassWord=hunter2&search_path=cg",
	} {
		d := DescribeStore("/data", raw)
		if strings.Contains(d, "hunter2") || !strings.HasPrefix(d, "PostgreSQL postgres://capgate@db") {
			t.Errorf("DescribeStore(%q) = %q", raw, d)
		}
	}
	if d := DescribeStore("/data", ""); d != "SQLite /data/capgate.db" {
		t.Errorf("DescribeStore(\"\") = %q", d)
	}
}

func TestOpenStoreWithoutCreate(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenStore(t.Context(), dir, "", false); !errors.Is(err, ErrNoStore) {
		t.Fatalf("OpenStore on an empty folder: %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err == nil {
		t.Fatal("OpenStore without create left a database behind")
	}
}

// TestReplicaWithOtherKeysRefused opens a gateway on a PostgreSQL store from one data folder,
// then another from a fresh data folder (other keys): the second must refuse to start and say
// which keys to copy, since its tokens would not verify on the first and its built-in apps
// would register under a key the first does not trust.
func TestReplicaWithOtherKeysRefused(t *testing.T) {
	pg := pgtest.Schema(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(dir string) (*Gateway, error) {
		return Open(context.Background(), Config{DataDir: dir, Store: pg, Listen: "-", Socket: "-", Logger: quiet})
	}
	shared := t.TempDir()
	g, err := open(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g2, err := open(shared) // a second replica on the same folder: the same keys
	if err != nil {
		t.Fatalf("a second replica with the same keys: %v", err)
	}
	g2.Close()
	_, err = open(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "gateway key") || !strings.Contains(err.Error(), KeyFile) {
		t.Fatalf("a replica with other keys: %v", err)
	}
}

// TestUIHosts: the approval page answers under loopback and the hosts the operator named, and
// refuses any other Host (a rebound DNS name) before it looks at the request.
func TestUIHosts(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := Open(context.Background(), Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", Logger: quiet,
		UIHosts: []string{"capgate.home.arpa"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h := g.Handler()
	for host, want := range map[string]int{
		"127.0.0.1:7766":             http.StatusUnauthorized, // no session yet
		"capgate.home.arpa:7766":     http.StatusUnauthorized,
		"attacker.example":           http.StatusMisdirectedRequest,
		"capgate.home.arpa.evil.net": http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest("GET", "/ui/tokens", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: HTTP %d, want %d", host, rec.Code, want)
		}
	}
}

// FuzzParseStore: whatever the store setting holds, ParseStore and DescribeStore do not panic,
// an error never repeats the setting (it may hold a password), a description never holds the
// URL's password, and a PostgreSQL store comes back with its scheme in lower case for pgx.
func FuzzParseStore(f *testing.F) {
	for _, s := range []string{"", "sqlite", "sqlite:x.db", "postgres://u:pw@h/db", "PostgreSQL://h/db?password=pw",
		"postgres://u:p%zz@h", "postgres://[::1]:5432/db", "mysql://h/db"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		kind, where, err := ParseStore("/data", raw)
		if err != nil {
			// The errors are fixed sentences: none repeats anything of the setting.
			switch err.Error() {
			case "store: sqlite: wants a file path after the colon",
				"store: not a valid postgres:// URL",
				`store: must be empty (SQLite in the data folder), "sqlite:PATH", or a postgres:// URL`:
			default:
				t.Fatalf("ParseStore(%q): an error that is not a fixed sentence: %v", raw, err)
			}
			return
		}
		d := DescribeStore("/data", raw)
		if kind != Postgres {
			return
		}
		if !strings.HasPrefix(where, "postgres://") && !strings.HasPrefix(where, "postgresql://") {
			t.Fatalf("ParseStore(%q) = %q", raw, where)
		}
		u, err := url.Parse(where)
		if err != nil {
			t.Fatalf("ParseStore accepted %q, which url cannot parse: %v", raw, err)
		}
		if pw, ok := u.User.Password(); ok && len(pw) > 3 && strings.Contains(d, pw) {
			t.Fatalf("DescribeStore(%q) = %q holds the password", raw, d)
		}
	})
}

// TestKeysMadeOnceByReplicasStartingTogether: many gateways starting at the same moment on one
// fresh data folder all end with the one key that was written first, whichever of them wrote
// it and whenever each looked.
func TestKeysMadeOnceByReplicasStartingTogether(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		keys := make([][]byte, 8)
		errs := make([]error, 8)
		done := make(chan struct{})
		for i := range keys {
			go func() {
				defer func() { done <- struct{}{} }()
				k, err := LoadOrCreateKey(dir)
				keys[i], errs[i] = k, err
			}()
		}
		for range keys {
			<-done
		}
		for i := range keys {
			if errs[i] != nil {
				t.Fatalf("starter %d: %v", i, errs[i])
			}
			if string(keys[i]) != string(keys[0]) {
				t.Fatalf("starter %d ended with another key", i)
			}
		}
	}
}

// TestFirstStartsWithOtherKeysRace: gateways with other keys starting at the same moment on
// one fresh store (each with a data folder of its own): the store pins one key, so one of
// them serves and the others refuse, never two with different keys. pinIdentity is driven
// directly, racing on its read and its write, many times over.
func TestFirstStartsWithOtherKeysRace(t *testing.T) {
	for round := range 30 {
		st, err := OpenStore(context.Background(), t.TempDir(), "", true)
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			k, err := keys.Generate()
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = pinIdentity(context.Background(), st, "gateway key", k.Public().(ed25519.PublicKey), "capgate.key")
			}()
		}
		wg.Wait()
		st.Close()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d starters with other keys were let serve one store: %v", round, ok, errs)
		}
	}
}
