package desktop

import (
	"context"
	"encoding/json"
	"errors"
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
