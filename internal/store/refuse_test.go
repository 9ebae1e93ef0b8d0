package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// backends opens each store on a fresh database: a SQLite file and a PostgreSQL schema of its
// own.
var backends = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "capgate.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// Keys an error must never repeat.
const (
	secretToken   = "tk-7f3a-secret"
	secretConsent = "cr-91c2-secret"
	secretClient  = "cl-55d0-secret"
	secretApp     = "org.example.secret"
	secretPerm    = "secret.permission"
)

// refusal is a call a store must refuse.
type refusal struct {
	name, want string // want: what the error says after "<backend>: "
	conflict   bool   // the error is ErrConflict
	call       func() error
}

// TestRefused holds both stores to the checks they share (package store): every argument the
// contract refuses is refused by each backend, with an error that names the backend, the
// operation and the field path, never a key's value nor a sentinel that means something else,
// and nothing is written.
func TestRefused(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)   // after what int64 nanoseconds hold
	early := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) // before it
	almostZero := time.Time{}.Add(time.Nanosecond)       // not the zero time, so not NULL
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			ctx := t.Context()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(s.PutClient(ctx, store.Client{ID: secretClient, Name: "one", Trust: "user", Created: now}))
			must(s.PutToken(ctx, store.Token{ID: secretToken, ClientID: secretClient, IssuedAt: now, ExpiresAt: now.Add(time.Hour), MaxUses: 5}))
			must(s.PutConsent(ctx, store.Consent{ID: secretConsent, ClientID: secretClient, State: store.ConsentPending, Created: now, Expires: now.Add(time.Hour)}))
			must(s.PutApp(ctx, store.App{AppID: secretApp, Tier: 1, Manifest: []byte("{}"), Updated: now}))

			// unchanged checks that nothing the refused calls could have touched moved.
			unchanged := func() {
				t.Helper()
				tok, err := s.GetToken(ctx, secretToken)
				must(err)
				if tok.Uses != 0 || tok.Revoked {
					t.Errorf("token changed: %+v", tok)
				}
				c, err := s.GetConsent(ctx, secretConsent)
				must(err)
				if c.State != store.ConsentPending {
					t.Errorf("consent changed: %+v", c)
				}
				cl, err := s.GetClient(ctx, secretClient)
				must(err)
				if cl.Name != "one" || !cl.Created.Equal(now) {
					t.Errorf("client changed: %+v", cl)
				}
				for what, err := range map[string]error{
					"token tk_new":   func() error { _, err := s.GetToken(ctx, "tk_new"); return err }(),
					"consent cr_new": func() error { _, err := s.GetConsent(ctx, "cr_new"); return err }(),
					"client cl_new":  func() error { _, err := s.GetClient(ctx, "cl_new"); return err }(),
					"app new":        func() error { _, err := s.GetApp(ctx, "org.example.new"); return err }(),
					"mandate":        func() error { _, err := s.GetMandate(ctx, secretPerm); return err }(),
					"state":          func() error { _, err := s.GetState(ctx, secretApp, "k"); return err }(),
					"audit":          func() error { _, err := s.AuditHead(ctx); return err }(),
				} {
					if !errors.Is(err, store.ErrNotFound) {
						t.Errorf("%s after the refused calls: %v, want ErrNotFound", what, err)
					}
				}
				cps, err := s.Checkpoints(ctx)
				if err != nil || len(cps) != 0 {
					t.Errorf("checkpoints after the refused calls: %v, %v", cps, err)
				}
			}

			entry := func(seq int64, prev string, at time.Time) store.AuditEntry {
				return store.AuditEntry{Seq: seq, PrevHash: prev, Hash: "h" + string(rune('0'+seq)), At: at, Body: []byte("{}")}
			}
			calls := []refusal{
				{"PutToken IssuedAt", "put token: token.IssuedAt: ", false, func() error {
					return s.PutToken(ctx, store.Token{ID: "tk_new", IssuedAt: far})
				}},
				{"PutToken ExpiresAt", "put token: token.ExpiresAt: ", false, func() error {
					return s.PutToken(ctx, store.Token{ID: "tk_new", IssuedAt: now, ExpiresAt: early})
				}},
				{"PutToken RevokedAt", "put token: token.RevokedAt: ", false, func() error {
					return s.PutToken(ctx, store.Token{ID: "tk_new", Revoked: true, RevokedAt: almostZero})
				}},
				{"PutToken MaxUses", "put token: token.MaxUses: ", false, func() error {
					return s.PutToken(ctx, store.Token{ID: "tk_new", ParentID: secretToken, MaxUses: -1})
				}},
				{"PutToken Uses", "put token: token.Uses: ", false, func() error {
					return s.PutToken(ctx, store.Token{ID: "tk_new", Uses: -5})
				}},
				{"TakeUse at no time", "take use: now is the zero time", false, func() error {
					_, err := s.TakeUse(ctx, secretToken, time.Time{})
					return err
				}},
				{"TakeUse out of range", "take use: now: ", false, func() error {
					_, err := s.TakeUse(ctx, secretToken, far)
					return err
				}},
				{"Revoke", "revoke: at: ", false, func() error { return s.Revoke(ctx, secretToken, early) }},
				{"ListTokens at no time", "list tokens: now is the zero time", false, func() error {
					_, err := s.ListTokens(ctx, true, time.Time{})
					return err
				}},
				{"PutConsent State", "put consent: consent.State: ", false, func() error {
					return s.PutConsent(ctx, store.Consent{ID: "cr_new", State: "Pending"})
				}},
				{"PutConsent no State", "put consent: consent.State: ", false, func() error {
					return s.PutConsent(ctx, store.Consent{ID: "cr_new"})
				}},
				{"PutConsent Answered", "put consent: consent.Answered: ", false, func() error {
					return s.PutConsent(ctx, store.Consent{ID: "cr_new", State: store.ConsentApproved, Answered: far})
				}},
				{"AnswerConsent pending", "answer consent: state: ", false, func() error {
					return s.AnswerConsent(ctx, secretConsent, store.ConsentPending, "person", "", now)
				}},
				{"AnswerConsent another spelling", "answer consent: state: ", false, func() error {
					return s.AnswerConsent(ctx, secretConsent, "APPROVED", "person", "", now)
				}},
				{"AnswerConsent at", "answer consent: at: ", false, func() error {
					return s.AnswerConsent(ctx, secretConsent, store.ConsentApproved, "person", "", far)
				}},
				{"ExpireConsents at no time", "expire consents: now is the zero time", false, func() error {
					_, err := s.ExpireConsents(ctx, time.Time{})
					return err
				}},
				{"PutClient Created", "put client: client.Created: ", false, func() error {
					return s.PutClient(ctx, store.Client{ID: "cl_new", Name: "new", Created: far})
				}},
				{"UpdateClient Created", "update client: client.Created: ", false, func() error {
					return s.UpdateClient(ctx, store.Client{ID: secretClient, Name: "renamed", Created: early})
				}},
				{"DeleteClient", "delete client: at: ", false, func() error { return s.DeleteClient(ctx, secretClient, far) }},
				{"PutApp Updated", "put app: app.Updated: ", false, func() error {
					return s.PutApp(ctx, store.App{AppID: "org.example.new", Updated: far})
				}},
				{"PutMandate AgreedAt", "put mandate: mandate.AgreedAt: ", false, func() error {
					return s.PutMandate(ctx, store.Mandate{Permission: secretPerm, Autonomy: "act_if_agreed", AgreedAt: far})
				}},
				{"PutMandate Updated", "put mandate: mandate.Updated: ", false, func() error {
					return s.PutMandate(ctx, store.Mandate{Permission: secretPerm, Autonomy: "act", Updated: early})
				}},
				{"CreateState nil", "create state: value: ", false, func() error { return s.CreateState(ctx, secretApp, "k", nil) }},
				{"AppendAudit At", "append audit: entries[1].At: ", false, func() error {
					return s.AppendAudit(ctx, []store.AuditEntry{entry(1, "", now), entry(2, "h1", far)})
				}},
				{"AppendAudit a gap", "append audit: entries[1] does not follow entries[0]", true, func() error {
					return s.AppendAudit(ctx, []store.AuditEntry{entry(1, "", now), entry(3, "h1", now)})
				}},
				{"AppendAudit not at the head", "append audit: entries[0] does not follow the head", true, func() error {
					return s.AppendAudit(ctx, []store.AuditEntry{entry(2, "h1", now)})
				}},
				{"AuditRange limit", "audit range: limit: ", false, func() error {
					_, err := s.AuditRange(ctx, 1, 0, -1)
					return err
				}},
				{"PutCheckpoint At", "put checkpoint: checkpoint.At: ", false, func() error {
					return s.PutCheckpoint(ctx, store.Checkpoint{Seq: 1, Head: "h1", At: far})
				}},
			}
			if seq, ok := s.(store.AuditSequencer); ok {
				calls = append(calls, refusal{"AppendAuditSequenced At", "append audit: entries[0].At: ", false, func() error {
					return seq.AppendAuditSequenced(ctx, func(head store.AuditEntry) ([]store.AuditEntry, error) {
						return []store.AuditEntry{entry(head.Seq+1, head.Hash, early)}, nil
					})
				}}, refusal{"AppendAuditSequenced not at the head", "append audit: entries[0] does not follow the head", true, func() error {
					return seq.AppendAuditSequenced(ctx, func(head store.AuditEntry) ([]store.AuditEntry, error) {
						return []store.AuditEntry{entry(head.Seq+2, head.Hash, now)}, nil
					})
				}})
			}
			for _, c := range calls {
				err := c.call()
				if err == nil {
					t.Errorf("%s: accepted", c.name)
					continue
				}
				msg := err.Error()
				if want := b.name + ": " + c.want; !strings.HasPrefix(msg, want) {
					t.Errorf("%s: %q, want it to start %q", c.name, msg, want)
				}
				for _, secret := range []string{secretToken, secretConsent, secretClient, secretApp, secretPerm, "2300", "1600"} {
					if strings.Contains(msg, secret) {
						t.Errorf("%s: %q repeats %q", c.name, msg, secret)
					}
				}
				if errors.Is(err, store.ErrConflict) != c.conflict {
					t.Errorf("%s: %v: ErrConflict %v, want %v", c.name, err, !c.conflict, c.conflict)
				}
				for _, sentinel := range []error{store.ErrNotFound, store.ErrExists, store.ErrRevoked, store.ErrExpired, store.ErrExhausted, store.ErrClientDisabled} {
					if errors.Is(err, sentinel) {
						t.Errorf("%s: %v is %v", c.name, err, sentinel)
					}
				}
			}
			unchanged()
		})
	}
}
