package conformance_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
)

const appID = "org.example.testkb"

// What a run found is kept in the store and read back as it was, by another process on the
// same database too.
func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	doc := loadManifest(t)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	results := run(t, &kb{doc: doc, behaviour: "wrong-shape"}, registry(t, ""), &conformance.Options{Now: func() time.Time { return at }})
	if _, err := conformance.Load(ctx, st, appID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("before any Save: %v", err)
	}
	if err := conformance.Save(ctx, st, doc, results); err != nil {
		t.Fatal(err)
	}
	rec, err := conformance.Load(ctx, gatewaytest.OpenStore(t, st.Path()), appID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.AppID != appID || rec.Version != "1.0.0" || !strings.HasPrefix(rec.Manifest, "sha256:") || !rec.Current(doc) {
		t.Fatalf("record %+v", rec)
	}
	if !reflect.DeepEqual(rec.Results, results) {
		t.Fatalf("results read back\n%+v\nwant\n%+v", rec.Results, results)
	}
	search, ok := rec.Result(searchID)
	if !ok || search.Status != conformance.StatusFailed || search.Case != "finds-onboarding" || !search.At.Equal(at) {
		t.Fatalf("search: %+v", search)
	}
	if _, ok := rec.Result("kb.org.example.testkb.nothing"); ok {
		t.Fatal("a result for a capability never run")
	}

	// Saving one capability's result keeps the others'.
	again := run(t, &kb{doc: doc}, registry(t, ""), nil, searchID)
	if err := conformance.Save(ctx, st, doc, again); err != nil {
		t.Fatal(err)
	}
	rec, err = conformance.Load(ctx, st, appID)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec.Result(searchID); !s.Status.Passed() {
		t.Fatalf("search after the second run: %+v", s)
	}
	if r, ok := rec.Result(reindexID); !ok || !r.Status.Passed() || len(rec.Results) != 4 || rec.Results[0].Capability != searchID {
		t.Fatalf("the other results after a run of one: %+v", rec.Results)
	}

	// Another manifest (an upgrade): the old record is not its status, and a Save for it keeps
	// nothing of the old one.
	upgraded := loadManifest(t, `"version": "1.0.0"`, `"version": "1.1.0"`)
	if rec.Current(upgraded) {
		t.Fatal("the record is current for another manifest")
	}
	if err := conformance.Save(ctx, st, upgraded, run(t, &kb{doc: upgraded}, registry(t, ""), nil, fetchID)); err != nil {
		t.Fatal(err)
	}
	rec, err = conformance.Load(ctx, st, appID)
	if err != nil || rec.Version != "1.1.0" || len(rec.Results) != 1 || rec.Results[0].Capability != fetchID || !rec.Current(upgraded) {
		t.Fatalf("after the upgrade: %+v, %v", rec, err)
	}

	if err := conformance.Delete(ctx, st, appID); err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.Load(ctx, st, appID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
	if err := conformance.Delete(ctx, st, appID); err != nil {
		t.Fatalf("Delete of nothing: %v", err)
	}
}

// The status is the host's: it is kept apart from the app's own state, which the app's
// handler may write.
func TestStatusIsNotTheAppsState(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	doc := loadManifest(t)
	if err := conformance.Save(ctx, st, doc, run(t, &kb{doc: doc}, registry(t, ""), nil)); err != nil {
		t.Fatal(err)
	}
	own, err := st.ListState(ctx, appID, "")
	if err != nil || len(own) != 0 {
		t.Fatalf("the app's own state holds %v, %v", own, err)
	}
}

func TestSaveRefuses(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	doc := loadManifest(t)
	ok := conformance.Result{Capability: searchID, Status: conformance.StatusPassed}
	for name, results := range map[string][]conformance.Result{
		"a capability of no manifest": {{Capability: "kb.org.example.other.search", Status: conformance.StatusPassed}},
		"no status":                   {{Capability: searchID}},
		"an unknown status":           {{Capability: searchID, Status: "mostly_passed"}},
		"a capability twice":          {ok, ok},
	} {
		if err := conformance.Save(ctx, st, doc, results); err == nil {
			t.Errorf("%s: saved", name)
		}
	}
	if err := conformance.Save(ctx, st, nil, nil); err == nil {
		t.Error("no manifest: saved")
	}
	// A reason is bounded again on Save.
	long := conformance.Result{Capability: searchID, Status: conformance.StatusFailed, Case: "a", Reason: strings.Repeat("\x00", 10000)}
	if err := conformance.Save(ctx, st, doc, []conformance.Result{long}); err != nil {
		t.Fatal(err)
	}
	rec, err := conformance.Load(ctx, st, appID)
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Results[0]; len(r.Reason) > conformance.MaxReasonBytes || strings.ContainsRune(r.Reason, 0) {
		t.Fatalf("reason of %d bytes kept", len(r.Reason))
	}
}

// A stored record that is not one Save writes is an error, never a status.
func TestLoadRefusesTampered(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	good := `{"app_id":"org.example.testkb","version":"1.0.0","manifest":"sha256:00","results":[{"capability":"kb.org.example.testkb.search","status":"passed","cases":1,"at":"2026-05-01T12:00:00Z","elapsed_ms":1}]}`
	put := func(t *testing.T, v string) {
		t.Helper()
		if err := st.PutState(ctx, "capgate.conformance", appID, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	put(t, good)
	if _, err := conformance.Load(ctx, st, appID); err != nil {
		t.Fatalf("the good record: %v", err)
	}
	for name, v := range map[string]string{
		"unknown field":       strings.Replace(good, `"version"`, `"trusted":true,"version"`, 1),
		"unknown status":      strings.Replace(good, `"passed"`, `"passed_trust_me"`, 1),
		"another app's":       strings.Replace(good, `"org.example.testkb"`, `"org.example.other"`, 1),
		"data after it":       good + `{}`,
		"not JSON":            `{"app_id":`,
		"a capability twice":  strings.Replace(good, `]}`, `,{"capability":"kb.org.example.testkb.search","status":"failed","cases":0,"at":"2026-05-01T12:00:00Z","elapsed_ms":1}]}`, 1),
		"a reason too long":   strings.Replace(good, `"cases":1`, `"reason":"`+strings.Repeat("x", conformance.MaxReasonBytes+1)+`","cases":1`, 1),
		"larger than a limit": strings.Replace(good, `"1.0.0"`, `"`+strings.Repeat("1", conformance.MaxRecordBytes)+`"`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			put(t, v)
			if rec, err := conformance.Load(ctx, st, appID); err == nil {
				t.Fatalf("loaded %+v", rec)
			}
		})
	}
}
