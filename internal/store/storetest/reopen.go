package storetest

import (
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Reopen checks that a store keeps what it was given across Close: it writes one of
// everything through the store open returns first, closes it, and finds it all through a
// second. open must open the same database on each call; Reopen closes what it opens.
func Reopen(t *testing.T, open func() (store.Store, error)) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	uid := 1000

	s, err := open()
	must(t, "Open", err)
	must(t, "PutApp", s.PutApp(ctx, store.App{AppID: "org.example.a", Alias: "a", Tier: 1, Manifest: []byte("{}"), Enabled: true, Updated: now}))
	must(t, "PutClient", s.PutClient(ctx, store.Client{ID: "cl_1", Name: "one", KeyHash: "sha256:1", Trust: "user", UnixUID: &uid, Created: now}))
	must(t, "PutToken", s.PutToken(ctx, store.Token{ID: "tk_1", ClientID: "cl_1", IssuedAt: now, ExpiresAt: now.Add(time.Hour), MaxUses: 5}))
	_, err = s.TakeUse(ctx, "tk_1", now)
	must(t, "TakeUse", err)
	must(t, "PutConsent", s.PutConsent(ctx, store.Consent{ID: "cr_1", ClientID: "cl_1", Kind: "call", State: store.ConsentPending, Created: now, Expires: now.Add(time.Minute)}))
	must(t, "AnswerConsent", s.AnswerConsent(ctx, "cr_1", store.ConsentApproved, "person", "ok", now))
	must(t, "PutMandate", s.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "act", Updated: now}))
	must(t, "PutState", s.PutState(ctx, "org.example.a", "k", []byte("v")))
	must(t, "AppendAudit", s.AppendAudit(ctx, []store.AuditEntry{{Seq: 1, Hash: "h1", At: now, Body: []byte("{}")}}))
	must(t, "PutCheckpoint", s.PutCheckpoint(ctx, store.Checkpoint{Seq: 1, Head: "h1", At: now, Body: []byte("sig")}))
	rev, err := s.Revision(ctx)
	must(t, "Revision", err)
	must(t, "Close", s.Close())

	s, err = open()
	must(t, "Open again", err)
	defer s.Close()
	a, err := s.AppByAlias(ctx, "a")
	must(t, "AppByAlias", err)
	if !a.Updated.Equal(now) || !a.Enabled {
		t.Errorf("app after reopen: %+v", a)
	}
	c, err := s.ClientByUID(ctx, uid)
	must(t, "ClientByUID", err)
	if c.ID != "cl_1" || !c.Created.Equal(now) {
		t.Errorf("client after reopen: %+v", c)
	}
	tok, err := s.GetToken(ctx, "tk_1")
	must(t, "GetToken", err)
	if tok.Uses != 1 {
		t.Errorf("token uses after reopen: %d", tok.Uses)
	}
	cr, err := s.GetConsent(ctx, "cr_1")
	must(t, "GetConsent", err)
	if cr.State != store.ConsentApproved || cr.Wording != "ok" {
		t.Errorf("consent after reopen: %+v", cr)
	}
	_, err = s.GetMandate(ctx, "fs.read")
	must(t, "GetMandate", err)
	v, err := s.GetState(ctx, "org.example.a", "k")
	must(t, "GetState", err)
	if string(v) != "v" {
		t.Errorf("state after reopen: %q", v)
	}
	h, err := s.AuditHead(ctx)
	must(t, "AuditHead", err)
	if h.Seq != 1 || h.Hash != "h1" {
		t.Errorf("audit head after reopen: %+v", h)
	}
	cps, err := s.Checkpoints(ctx)
	must(t, "Checkpoints", err)
	if len(cps) != 1 {
		t.Errorf("checkpoints after reopen: %d", len(cps))
	}
	if got, err := s.Revision(ctx); err != nil || got != rev {
		t.Errorf("Revision after reopen: %d, %v; want %d", got, err, rev)
	}
}

// ExactTimes checks what Run does not require of a store, on an empty one: that it keeps a
// time to the nanosecond and gives it back in UTC, and refuses a time that int64 Unix
// nanoseconds cannot hold.
func ExactTimes(t *testing.T, s store.Store) {
	ctx := t.Context()
	ts := time.Date(2100, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("Y", -7*3600))
	must(t, "PutMandate", s.PutMandate(ctx, store.Mandate{Permission: "p", AgreedAt: ts}))
	m, err := s.GetMandate(ctx, "p")
	must(t, "GetMandate", err)
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
