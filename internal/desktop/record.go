package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// StateApp is the app id under which the desktop apps added to capgate are kept in the
// store's app state (store.State): for each, under its app id, the Record it was added with.
const StateApp = "capgate.desktop"

// Record is a desktop app as it was added: its name on the accessibility bus, the element of
// each capability, and the shape its pin holds it to. The manifest itself is the
// registry's.
type Record struct {
	AppID    string             `json:"app_id"`
	Name     string             `json:"name"`
	Elements map[string]Element `json:"elements"`
	Shape    string             `json:"shape"`
	Added    time.Time          `json:"added"`
}

// RecordOf is the record of d, derived from the app named name.
func RecordOf(d *Derived, name string, at time.Time) Record {
	return Record{AppID: d.AppID, Name: name, Elements: d.Elements, Shape: d.Shape, Added: at.UTC()}
}

// SaveRecord keeps r in st.
func SaveRecord(ctx context.Context, st store.State, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return st.PutState(ctx, StateApp, r.AppID, b)
}

// ErrCorrupt is a stored record that does not decode.
var ErrCorrupt = errors.New("desktop: a stored record does not decode")

// LoadRecord reads the record of the app appID: store.ErrNotFound when it was never added.
func LoadRecord(ctx context.Context, st store.State, appID string) (Record, error) {
	b, err := st.GetState(ctx, StateApp, appID)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if json.Unmarshal(b, &r) != nil || r.AppID != appID || r.Name == "" {
		return Record{}, ErrCorrupt
	}
	return r, nil
}

// Derived is the record as the Handler takes it.
func (r Record) Derived() *Derived {
	return &Derived{AppID: r.AppID, Elements: r.Elements, Shape: r.Shape}
}

// KindReview is the kind of consent request that asks the person to accept what a desktop
// app's tree offers now, after it changed shape: approved, its capabilities are registered
// anew; until then the app is not working.
const KindReview = "desktop"

// Review is an open review of a desktop app whose tree changed: the consent request and the
// app as derived from its tree now, registered if the person approves.
type Review struct {
	ConsentID string `json:"consent_id"`
	Record    Record `json:"record"`
	Manifest  []byte `json:"manifest"`
}

func reviewKey(appID string) string { return "review/" + appID }

// SaveReview keeps the open review of r.Record's app.
func SaveReview(ctx context.Context, st store.State, r Review) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return st.PutState(ctx, StateApp, reviewKey(r.Record.AppID), b)
}

// LoadReview reads the open review of the app appID: store.ErrNotFound when none is open.
func LoadReview(ctx context.Context, st store.State, appID string) (Review, error) {
	b, err := st.GetState(ctx, StateApp, reviewKey(appID))
	if err != nil {
		return Review{}, err
	}
	var r Review
	if json.Unmarshal(b, &r) != nil || r.Record.AppID != appID {
		return Review{}, ErrCorrupt
	}
	return r, nil
}

// DeleteReview closes the app's review.
func DeleteReview(ctx context.Context, st store.State, appID string) error {
	return st.PutState(ctx, StateApp, reviewKey(appID), nil)
}

// Difference says what changed from the capabilities of before to those of after, one line
// each: "- ID" for one gone, "+ ID" for one new, ordered by id.
func Difference(before, after map[string]Element) []string {
	var out []string
	for id := range before {
		if _, ok := after[id]; !ok {
			out = append(out, "- "+id)
		}
	}
	for id, e := range after {
		if b, ok := before[id]; !ok {
			out = append(out, "+ "+id)
		} else if b.Role != e.Role || b.Action != e.Action || !samePath(b.Path, e.Path) {
			out = append(out, "~ "+id+" (its element moved or changed)")
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(a[2:], b[2:]) })
	return out
}

func samePath(a, b []Step) bool { return slices.Equal(a, b) }
