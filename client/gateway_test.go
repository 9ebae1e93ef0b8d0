package client_test

// A real gateway for the client's tests and its example: internal/gateway opened on a
// temporary data folder (SQLite store, registry, tokens, consent, audit, broker, the built-in
// apps), a small desk app of the test's own registered at Tier 1, served on a loopback port
// and a unix socket by Gateway.Serve, as capgate serve does.

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const deskID = "org.example.desk"

// deskManifest: a read that fails on an unknown note, a reversible write, a slow public read
// with a 50 ms limit, a publish (for a mandate that hands it off) and a privileged read.
const deskManifest = `{"app_id":"org.example.desk","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"desk.org.example.desk.read","name":"Read a note","description":"Reads one note.","category":"STATE_QUERY",
  "parameters":{"type":"object","required":["id"],"additionalProperties":false,"properties":{"id":{"type":"string","format":"text"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.desk.read"},
 {"id":"desk.org.example.desk.write","name":"Write a note","description":"Writes a note.","category":"TEXT_INPUT",
  "parameters":{"type":"object","required":["id","text"],"additionalProperties":false,"properties":{"id":{"type":"string","format":"text"},"text":{"type":"string","format":"text"}}},
  "returns":{"type":"object"},"side_effects":"write","permission":"app.desk.write","undo_window_ms":60000},
 {"id":"desk.org.example.desk.slow","name":"Slow","description":"Takes its time.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","timeout_ms":50},
 {"id":"desk.org.example.desk.publish","name":"Publish","description":"Publishes a note.","category":"COMMUNICATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"write","permission":"app.desk.publish"},
 {"id":"desk.org.example.desk.admin","name":"Admin","description":"Reads the desk's internals.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"privileged","permission":"app.desk.admin"}
]}`

// desk is the test app, on its own data model: a map of notes.
type desk struct {
	doc   *manifest.Document
	mu    sync.Mutex
	notes map[string]string
	ran   int
}

func (d *desk) Manifest() *manifest.Document { return d.doc }

func (d *desk) Invoke(ctx context.Context, id string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	var p struct{ ID, Text string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(nil)
	}
	d.mu.Lock()
	d.ran++
	d.mu.Unlock()
	ok := func(v any) (sdk.Result, error) {
		data, _ := json.Marshal(v)
		return sdk.Result{Success: true, Data: data}, nil
	}
	switch id[len("desk."+deskID+"."):] {
	case "slow":
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	case "read":
		d.mu.Lock()
		text, found := d.notes[p.ID]
		d.mu.Unlock()
		if !found {
			return sdk.Result{}, sdk.ExecutionFailed("no such note", false)
		}
		return ok(map[string]string{"text": text})
	case "write":
		d.mu.Lock()
		old := d.notes[p.ID]
		d.notes[p.ID] = p.Text
		d.mu.Unlock()
		data, _ := json.Marshal(map[string]string{"previous": old})
		undo, _ := json.Marshal([2]string{p.ID, old})
		return sdk.Result{Success: true, Data: data, UndoToken: string(undo)}, nil
	case "publish", "admin":
		return ok(map[string]bool{"done": true})
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (d *desk) Undo(_ context.Context, _, undoToken string, _ sdk.InvocationContext) error {
	var was [2]string
	if err := json.Unmarshal([]byte(undoToken), &was); err != nil {
		return err
	}
	d.mu.Lock()
	d.notes[was[0]] = was[1]
	d.mu.Unlock()
	return nil
}

func (d *desk) note(id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.notes[id]
}

func (d *desk) invocations() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ran
}

// served is a gateway serving on 127.0.0.1 and a unix socket.
type served struct {
	g      *gateway.Gateway
	desk   *desk
	url    string // http://127.0.0.1:PORT
	socket string
	dir    string
	stop   func() error
}

// serveOptions tune the gateway for a test; zero values are the gateway's defaults.
type serveOptions struct {
	consentWait time.Duration
	consentTTL  time.Duration
}

// serve opens a gateway in a new temporary folder, registers the desk app at Tier 1 and
// serves it. stop stops serving, closes the gateway and removes the folder.
func serve(o serveOptions) (*served, error) {
	// Under /tmp rather than a test's folder: a unix socket's path has at most 107 bytes.
	dir, err := os.MkdirTemp("", "cgclient-")
	if err != nil {
		return nil, err
	}
	s, err := serveIn(dir, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func serveIn(dir string, o serveOptions) (*served, error) {
	ctx := context.Background()
	appKey, err := keys.Generate()
	if err != nil {
		return nil, err
	}
	trusted := filepath.Join(dir, "trusted")
	if err := keys.WritePublicKey(filepath.Join(trusted, deskID+".pub"), appKey.Public().(ed25519.PublicKey), false); err != nil {
		return nil, err
	}
	doc, err := manifest.Load([]byte(deskManifest))
	if err != nil {
		return nil, err
	}
	signed, err := manifest.Sign(doc, appKey)
	if err != nil {
		return nil, err
	}
	d := &desk{notes: map[string]string{"1": "milk"}}
	g, err := gateway.Open(ctx, gateway.Config{
		DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", Socket: filepath.Join(dir, "capgate.sock"), TrustedDir: trusted,
		Handlers: map[string]sdk.Handler{deskID: d}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ConsentWait: o.consentWait, ConsentTTL: o.consentTTL, DelayedCommit: -1,
	})
	if err != nil {
		return nil, err
	}
	app, err := g.Registry.Register(ctx, signed, "desk")
	if err != nil || app.Tier != manifest.Tier1 {
		g.Close()
		return nil, fmt.Errorf("the desk app: tier %d (%s), %v", app.Tier, app.Reason, err)
	}
	d.doc = app.Doc
	sctx, cancel := context.WithCancel(ctx)
	where := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- g.Serve(sctx, func(tcp, sock string) { where <- [2]string{tcp, sock} }) }()
	s := &served{g: g, desk: d, dir: dir}
	select {
	case w := <-where:
		s.url, s.socket = "http://"+w[0], w[1]
	case err := <-done:
		cancel()
		g.Close()
		return nil, fmt.Errorf("serve: %w", err)
	}
	s.stop = func() error {
		cancel()
		err := <-done
		if cerr := g.Close(); err == nil {
			err = cerr
		}
		return errors.Join(err, os.RemoveAll(dir))
	}
	return s, nil
}

// newServed is serve for a test, stopped at its end.
func newServed(t *testing.T, o serveOptions) *served {
	t.Helper()
	s, err := serve(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping the gateway: %v", err)
		}
	})
	return s
}

// clientSpec is a client to add.
type clientSpec struct {
	name     string
	trust    manifest.AuthLevel // "" is user
	uid      *int
	neverAsk bool
}

// addClient adds a client to the gateway's store, as capgate client add does, and returns
// its key.
func (s *served) addClient(c clientSpec) (key, id string, err error) {
	key, hash, err := operator.NewClientKey()
	if err != nil {
		return "", "", err
	}
	if id, err = operator.NewClientID(); err != nil {
		return "", "", err
	}
	if c.trust == "" {
		c.trust = "user"
	}
	err = s.g.Store.PutClient(context.Background(), store.Client{ID: id, Name: c.name, KeyHash: hash, Trust: c.trust,
		NeverAsk: c.neverAsk, UnixUID: c.uid, Created: time.Now()})
	return key, id, err
}

// mustClient is addClient for a test.
func (s *served) mustClient(t *testing.T, c clientSpec) (key, id string) {
	t.Helper()
	key, id, err := s.addClient(c)
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// answerNext answers the next consent request of kind ("call", "token") that becomes pending
// with verb (approve or deny), as the person on the approval page would; it yields the
// request's id, or "" when none came within 10 s.
func (s *served) answerNext(t *testing.T, kind, verb string) <-chan string {
	t.Helper()
	ctx := context.Background()
	before := map[string]bool{}
	cs, err := s.g.Store.ListConsents(ctx, store.ConsentPending)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		before[c.ID] = true
	}
	got := make(chan string, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			cs, err := s.g.Store.ListConsents(ctx, store.ConsentPending)
			if err != nil {
				t.Error(err)
				break
			}
			for _, c := range cs {
				if c.Kind != kind || before[c.ID] {
					continue
				}
				if verb == "approve" {
					err = s.g.Consent.Approve(ctx, c.ID, "person", false)
				} else {
					err = s.g.Consent.Deny(ctx, c.ID, "person")
				}
				if err != nil {
					t.Errorf("%s %s: %v", verb, c.ID, err)
				}
				got <- c.ID
				return
			}
		}
		got <- ""
	}()
	return got
}
