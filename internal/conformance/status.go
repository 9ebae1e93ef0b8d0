package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// stateApp is the store state the test statuses are kept in, one key per app id: the host's
// own, like capgate.undo, so that no app can write its own status.
const stateApp = "capgate.conformance"

// Record is an app's test status: the last result of each capability's suite, and the
// manifest it was run against.
//
// Evolution: a new field must be optional, its zero value meaning what records without it
// meant; Load refuses unknown fields, so a record written by a newer capgate reads as an error,
// never as a status it does not say.
type Record struct {
	AppID   string `json:"app_id"`
	Version string `json:"version"`
	// Manifest is "sha256:" and the hex digest of the manifest's canonical form (its
	// signature left out): a record is the status of that manifest only (Current).
	Manifest string   `json:"manifest"`
	Results  []Result `json:"results"` // in the manifest's order of capabilities
}

// Current reports whether r is the status of doc: the same app and the same manifest. A status
// recorded for another version, or another manifest of the same version, is not doc's.
func (r *Record) Current(doc *manifest.Document) bool {
	return r != nil && doc != nil && r.AppID == doc.Manifest().AppID && r.Manifest == manifestDigest(doc)
}

// Result returns the result of the capability id, and whether r has one.
func (r *Record) Result(id string) (Result, bool) {
	if r == nil {
		return Result{}, false
	}
	for _, res := range r.Results {
		if res.Capability == id {
			return res, true
		}
	}
	return Result{}, false
}

func manifestDigest(doc *manifest.Document) string {
	sum := sha256.Sum256(doc.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Save records results as the test status of doc's capabilities. Results of capabilities that
// results leave out are kept from the stored record when that record is Current for doc (a run
// of one capability leaves the others' status as it was), and dropped otherwise. Each result
// must be of a capability of doc, at most once, with a valid status; the reason is bounded
// again. Two Saves for one app at once: the last one wins.
func Save(ctx context.Context, st store.State, doc *manifest.Document, results []Result) error {
	if doc == nil {
		return errors.New("conformance: no manifest")
	}
	m := doc.Manifest()
	given := map[string]Result{}
	for i, res := range results {
		switch {
		case m.Capability(res.Capability) == nil:
			return fmt.Errorf("conformance: results[%d].capability: %w", i, ErrUnknownCapability)
		case !res.Status.Valid():
			return fmt.Errorf("conformance: results[%d].status: not a status", i)
		}
		if _, dup := given[res.Capability]; dup {
			return fmt.Errorf("conformance: results[%d].capability: given twice", i)
		}
		res.Reason = bounded(res.Reason)
		res.Case = bounded(res.Case)
		given[res.Capability] = res
	}
	rec := &Record{AppID: m.AppID, Version: m.Version, Manifest: manifestDigest(doc)}
	old, err := Load(ctx, st, m.AppID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		old = nil
	case err != nil:
		// A record that no longer reads is replaced, never merged.
		old = nil
		if ctx.Err() != nil {
			return err
		}
	}
	for _, c := range m.Capabilities {
		if res, ok := given[c.ID]; ok {
			rec.Results = append(rec.Results, res)
		} else if res, ok := old.Result(c.ID); ok && old.Current(doc) {
			rec.Results = append(rec.Results, res)
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(raw) > MaxRecordBytes {
		return fmt.Errorf("conformance: the record is larger than %d bytes", MaxRecordBytes)
	}
	return st.PutState(ctx, stateApp, m.AppID, raw)
}

// Load returns the test status recorded for the app appID: store.ErrNotFound when none is. A
// stored record that does not read back as one Save writes (unknown fields, a bad status,
// too large) is an error, not a status. Whether it is the status of the manifest installed now
// is Record.Current's to say.
func Load(ctx context.Context, st store.State, appID string) (*Record, error) {
	raw, err := st.GetState(ctx, stateApp, appID)
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxRecordBytes {
		return nil, fmt.Errorf("conformance: %s: the stored status is larger than %d bytes", appID, MaxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("conformance: %s: the stored status does not parse: %w", appID, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("conformance: %s: the stored status has data after it", appID)
	}
	if rec.AppID != appID {
		return nil, fmt.Errorf("conformance: %s: app_id: not the app it is stored for", appID)
	}
	var seen []string
	for i, res := range rec.Results {
		switch {
		case !res.Status.Valid():
			return nil, fmt.Errorf("conformance: %s: results[%d].status: not a status", appID, i)
		case slices.Contains(seen, res.Capability):
			return nil, fmt.Errorf("conformance: %s: results[%d].capability: given twice", appID, i)
		case len(res.Reason) > MaxReasonBytes:
			return nil, fmt.Errorf("conformance: %s: results[%d].reason: longer than %d bytes", appID, i, MaxReasonBytes)
		case len(res.Case) > MaxReasonBytes:
			return nil, fmt.Errorf("conformance: %s: results[%d].case: longer than %d bytes", appID, i, MaxReasonBytes)
		}
		seen = append(seen, res.Capability)
	}
	return &rec, nil
}

// Delete removes the test status of the app appID (a missing one is no error), as when the app
// is removed.
func Delete(ctx context.Context, st store.State, appID string) error {
	return st.PutState(ctx, stateApp, appID, nil)
}
