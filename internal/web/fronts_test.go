package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/opsock"
	"github.com/capgate/capgate/internal/store"
)

// A front is one way a change reaches the operator service: the approval page, the operator
// socket of the running gateway (what the command line uses when a gateway serves the
// folder), the store directly with the folder's audit log (what it uses otherwise), and the
// IPC API (a client revoking its own token).
type front struct {
	name string
	by   string // the records' client_id
	// each action's way through this front; an action the front does not offer is absent
	answer       func(t *testing.T, id string, verb operator.Verb)
	revoke       func(t *testing.T, ts tokenSet, id string)
	changeClient func(t *testing.T, id string, action operator.ClientAction)
	addClient    func(t *testing.T, name string)
	registerApp  func(t *testing.T, raw []byte)
}

// Every change the fronts share, made through each front that offers it, leaves the same
// records in the audit log: the same actions, kinds, decisions, results, codes and subjects,
// a decision before the change and its outcome after, with only who made it (and where, in
// words) differing. A failing change (a token or client that does not exist) is recorded
// alike too.
func TestEveryFrontRecordsAlike(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	ctx := e.ctx
	cli := operator.Actor{ID: "cli:front-test", Who: "the operator", Where: "from the command line"}

	// The approval page, logged in.
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	same := map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}
	pagePost := func(t *testing.T, path string, want int) {
		t.Helper()
		if resp, body := b.post(path, url.Values{"csrf": {csrf}}, same); resp.StatusCode != want {
			t.Fatalf("POST %s: HTTP %d, want %d: %s", path, resp.StatusCode, want, body)
		}
	}
	page := front{name: "page", by: "person (approval page)",
		answer: func(t *testing.T, id string, verb operator.Verb) { b.answer(id, string(verb), csrf, nil) },
		revoke: func(t *testing.T, _ tokenSet, id string) {
			want := http.StatusSeeOther
			if strings.HasPrefix(id, "tok_missing") {
				want = http.StatusNotFound
			}
			pagePost(t, "/ui/tokens/"+id+"/revoke", want)
		},
		changeClient: func(t *testing.T, id string, action operator.ClientAction) {
			pagePost(t, "/ui/clients/"+id+"/"+string(action), http.StatusSeeOther)
		},
	}

	// The operator socket, served by the gateway's own operator service as capgate serve does.
	sockDir, err := os.MkdirTemp("", "opsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := opsock.Listen(filepath.Join(sockDir, opsock.File))
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- opsock.New(e.g.Operator, nil, nil).Serve(sctx, ln, time.Second) }()
	t.Cleanup(func() { stop(); <-served })
	sock, err := opsock.Dial(filepath.Join(sockDir, opsock.File))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sock.Close)

	// The store directly, with the folder's audit log, as the command line does with no
	// gateway answering: a second connection to the same store, a writer of its own.
	st, err := gateway.OpenStore(ctx, e.data, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	olog := gateway.OpenOperatorLog(st, e.data, nil)
	t.Cleanup(func() { olog.Close() })
	direct := &operator.Service{Audit: olog.Recorder(), Consent: consent.New(st, &consent.Options{Surface: true}),
		Tokens: storeRevoker{st}, Clients: st, Registry: e.g.Registry}

	via := func(name string, c opsock.Changes) front {
		expectErr := func(t *testing.T, err error, missing bool) {
			t.Helper()
			if missing != (err != nil) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		return front{name: name, by: cli.ID,
			answer: func(t *testing.T, id string, verb operator.Verb) {
				expectErr(t, c.Answer(ctx, cli, id, verb, false), false)
			},
			revoke: func(t *testing.T, _ tokenSet, id string) {
				expectErr(t, c.Revoke(ctx, cli, id), strings.HasPrefix(id, "tok_missing"))
			},
			changeClient: func(t *testing.T, id string, action operator.ClientAction) {
				_, err := c.ChangeClient(ctx, cli, id, action)
				expectErr(t, err, false)
			},
			addClient: func(t *testing.T, name string) {
				_, _, err := c.AddClient(ctx, cli, operator.NewClient{Name: name, Trust: "user"})
				expectErr(t, err, false)
			},
			registerApp: func(t *testing.T, raw []byte) {
				_, err := c.RegisterApp(ctx, cli, raw, "")
				expectErr(t, err, false)
			},
		}
	}
	ipcFront := front{name: "ipc", by: "",
		revoke: func(t *testing.T, ts tokenSet, id string) {
			var out map[string]any
			want := http.StatusOK
			if strings.HasPrefix(id, "tok_missing") {
				want = http.StatusNotFound
			}
			if code := e.api(ts.key, "/v1/tokens/revoke", map[string]string{"token": id}, &out); code != want {
				t.Fatalf("ipc revoke: HTTP %d %v", code, out)
			}
		},
	}
	fronts := []front{page, via("socket", sock), via("store", direct), ipcFront}

	// records runs change and returns the records it appended, as the fronts must agree on
	// them, after checking who each names.
	n := 0
	records := func(t *testing.T, f front, clientID string, change func()) []string {
		t.Helper()
		head, err := e.g.Store.AuditHead(ctx)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		change()
		es, err := e.g.Store.AuditRange(ctx, head.Seq+1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range es {
			d, err := audit.DecodeEntry(en)
			if err != nil {
				t.Fatal(err)
			}
			r := d.Record
			if !strings.Contains(r.Action, ".") || r.Kind == "" {
				continue
			}
			want := f.by
			if want == "" {
				want = clientID
			}
			if r.ClientID != want {
				t.Errorf("%s: %s %s: client_id %q, want %q", f.name, r.Kind, r.Action, r.ClientID, want)
			}
			out = append(out, fmt.Sprintf("%s %s %s result=%q code=%q app=%q cap=%q perm=%q consent=%v token=%v",
				r.Kind, r.Action, r.Decision, r.Result, r.Code, r.App, r.Capability, r.Permission, r.ConsentID != "", r.TokenID != ""))
		}
		return out
	}
	compare := func(t *testing.T, action string, got map[string][]string) {
		t.Helper()
		var first string
		for _, f := range fronts {
			rs, ok := got[f.name]
			if !ok {
				continue
			}
			if len(rs) != 2 || !strings.HasPrefix(rs[0], "decision ") || !strings.HasPrefix(rs[1], "outcome ") {
				t.Errorf("%s through %s: records %q, want a decision and its outcome", action, f.name, rs)
			}
			if first == "" {
				first = f.name
				continue
			}
			if !slices.Equal(rs, got[first]) {
				t.Errorf("%s: the records differ between fronts\n%s: %q\n%s: %q", action, first, got[first], f.name, rs)
			}
		}
		if len(got) < 2 {
			t.Errorf("%s went through %d front(s); the test compares at least two", action, len(got))
		}
	}

	for _, verb := range []operator.Verb{operator.Approve, operator.Deny} {
		got := map[string][]string{}
		for _, f := range fronts {
			if f.answer == nil {
				continue
			}
			c, err := e.g.Consent.Ask(ctx, consent.Request{ClientID: "cl_alice", ClientName: "alice", Kind: consent.KindCall,
				Permission: "app.pad.write", Summary: "Write a note"})
			if err != nil {
				t.Fatal(err)
			}
			got[f.name] = records(t, f, "", func() { f.answer(t, c.ID, verb) })
		}
		compare(t, "consent."+string(verb), got)
	}

	for _, missing := range []bool{false, true} {
		got := map[string][]string{}
		for _, f := range fronts {
			n++
			ts := e.tokens(fmt.Sprintf("revoker %d", n))
			id := ts.other.ID
			if missing {
				id = "tok_missing" + fmt.Sprint(n)
			}
			got[f.name] = records(t, f, ts.clientID, func() { f.revoke(t, ts, id) })
		}
		compare(t, fmt.Sprintf("token.revoke (missing %v)", missing), got)
	}

	for _, action := range []operator.ClientAction{operator.ClientDisable, operator.ClientEnable, operator.ClientRemove} {
		got := map[string][]string{}
		for _, f := range fronts {
			if f.changeClient == nil {
				continue
			}
			n++
			name := fmt.Sprintf("changed %d", n)
			e.addClient(name)
			c, err := e.g.Store.ClientByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if action == operator.ClientEnable {
				if err := e.g.Store.SetClientDisabled(ctx, c.ID, true); err != nil {
					t.Fatal(err)
				}
			}
			got[f.name] = records(t, f, "", func() { f.changeClient(t, c.ID, action) })
		}
		compare(t, "client."+string(action), got)
	}

	got := map[string][]string{}
	for _, f := range fronts {
		if f.addClient == nil {
			continue
		}
		n++
		got[f.name] = records(t, f, "", func() { f.addClient(t, fmt.Sprintf("added %d", n)) })
	}
	compare(t, "client.add", got)

	got = map[string][]string{}
	for _, f := range fronts {
		if f.registerApp == nil {
			continue
		}
		raw := []byte(strings.ReplaceAll(padManifest, "org.example.pad", "org.example.pad"+strings.Repeat("x", len(got)+1)))
		rs := records(t, f, "", func() { f.registerApp(t, raw) })
		for i := range rs { // each front registers an app of its own
			rs[i] = strings.ReplaceAll(rs[i], `app="org.example.pad`+strings.Repeat("x", len(got)+1)+`"`, `app="org.example.padX"`)
		}
		got[f.name] = rs
	}
	compare(t, "app.register", got)
}

// storeRevoker revokes in the store directly, as the command line does beside a gateway.
type storeRevoker struct{ st store.Store }

func (s storeRevoker) Revoke(ctx context.Context, id string) error {
	return s.st.Revoke(ctx, id, time.Now())
}
