package postgres_test

import (
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// TestReopen writes one of everything, closes the store, opens the schema again and finds it
// all.
func TestReopen(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Schema(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	uid := 1000

	s, err := postgres.Open(ctx, dsn)
	must(t, err)
	must(t, s.PutApp(ctx, store.App{AppID: "org.example.a", Alias: "a", Tier: 1, Manifest: []byte("{}"), Enabled: true, Updated: now}))
	must(t, s.PutClient(ctx, store.Client{ID: "cl_1", Name: "one", KeyHash: "sha256:1", Trust: "user", UnixUID: &uid, Created: now}))
	must(t, s.PutToken(ctx, store.Token{ID: "tk_1", ClientID: "cl_1", IssuedAt: now, ExpiresAt: now.Add(time.Hour), MaxUses: 5}))
	_, err = s.TakeUse(ctx, "tk_1", now)
	must(t, err)
	must(t, s.PutConsent(ctx, store.Consent{ID: "cr_1", ClientID: "cl_1", Kind: "call", State: store.ConsentPending, Created: now, Expires: now.Add(time.Minute)}))
	must(t, s.AnswerConsent(ctx, "cr_1", store.ConsentApproved, "person", "ok", now))
	must(t, s.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "act", Updated: now}))
	must(t, s.PutState(ctx, "org.example.a", "k", []byte("v")))
	must(t, s.AppendAudit(ctx, []store.AuditEntry{{Seq: 1, Hash: "h1", At: now, Body: []byte("{}")}}))
	must(t, s.PutCheckpoint(ctx, store.Checkpoint{Seq: 1, Head: "h1", At: now, Body: []byte("sig")}))
	rev, err := s.Revision(ctx)
	must(t, err)
	must(t, s.Close())

	s = open(t, dsn)
	a, err := s.AppByAlias(ctx, "a")
	must(t, err)
	if !a.Updated.Equal(now) || !a.Enabled {
		t.Errorf("app after reopen: %+v", a)
	}
	c, err := s.ClientByUID(ctx, uid)
	must(t, err)
	if c.ID != "cl_1" || !c.Created.Equal(now) {
		t.Errorf("client after reopen: %+v", c)
	}
	tok, err := s.GetToken(ctx, "tk_1")
	must(t, err)
	if tok.Uses != 1 {
		t.Errorf("token uses after reopen: %d", tok.Uses)
	}
	cr, err := s.GetConsent(ctx, "cr_1")
	must(t, err)
	if cr.State != store.ConsentApproved || cr.Wording != "ok" {
		t.Errorf("consent after reopen: %+v", cr)
	}
	_, err = s.GetMandate(ctx, "fs.read")
	must(t, err)
	v, err := s.GetState(ctx, "org.example.a", "k")
	must(t, err)
	if string(v) != "v" {
		t.Errorf("state after reopen: %q", v)
	}
	h, err := s.AuditHead(ctx)
	must(t, err)
	if h.Seq != 1 || h.Hash != "h1" {
		t.Errorf("audit head after reopen: %+v", h)
	}
	cps, err := s.Checkpoints(ctx)
	must(t, err)
	if len(cps) != 1 {
		t.Errorf("checkpoints after reopen: %d", len(cps))
	}
	if got, err := s.Revision(ctx); err != nil || got != rev {
		t.Errorf("Revision after reopen: %d, %v; want %d", got, err, rev)
	}
}

// TestTimes checks what the suite does not require: times keep nanoseconds and come back in
// UTC, and those int64 nanoseconds cannot hold are refused.
func TestTimes(t *testing.T) {
	s := openFresh(t)
	ctx := t.Context()
	ts := time.Date(2100, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("Y", -7*3600))
	must(t, s.PutMandate(ctx, store.Mandate{Permission: "p", AgreedAt: ts}))
	m, err := s.GetMandate(ctx, "p")
	must(t, err)
	if !m.AgreedAt.Equal(ts) || m.AgreedAt.Location() != time.UTC {
		t.Errorf("AgreedAt = %v, want %v in UTC", m.AgreedAt, ts)
	}
	for _, bad := range []time.Time{
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if err := s.PutMandate(ctx, store.Mandate{Permission: "q", Updated: bad}); err == nil {
			t.Errorf("PutMandate with Updated %v: no error", bad)
		}
	}
}
