package settings_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/sdk"
)

// mapState is a State in memory.
type mapState map[string][]byte

func (m mapState) Get(_ context.Context, key string) ([]byte, error) {
	v, ok := m[key]
	if !ok {
		return nil, settings.ErrUnset
	}
	return v, nil
}

func (m mapState) Put(_ context.Context, key string, value []byte) error {
	m[key] = value
	return nil
}

// TestGetSetting reads a setting never set (its default), one set through set_setting, and
// one whose stored text is not JSON (its default again), and checks the answer's members.
func TestGetSetting(t *testing.T) {
	st := mapState{}
	app := settings.New(nil, st)
	ctx := context.Background()
	get := func(category, key string) string {
		t.Helper()
		params, _ := json.Marshal(map[string]string{"category": category, "key": key})
		r, err := app.Invoke(ctx, settings.GetID, params, sdk.InvocationContext{})
		if err != nil {
			t.Fatalf("get %s.%s: %v", category, key, err)
		}
		return string(r.Data)
	}
	if got, want := get("display", "brightness"), `{"category":"display","key":"brightness","type":"int","value":80}`; got != want {
		t.Errorf("unset: got %s, want %s", got, want)
	}
	if _, err := app.Invoke(ctx, settings.SetID, json.RawMessage(`{"category":"display","key":"brightness","value":35}`), sdk.InvocationContext{}); err != nil {
		t.Fatal(err)
	}
	if got, want := get("display", "brightness"), `{"category":"display","key":"brightness","type":"int","value":35}`; got != want {
		t.Errorf("set: got %s, want %s", got, want)
	}
	st["network.dns_servers"] = []byte(` [ "1.1.1.1" ] `)
	if got, want := get("network", "dns_servers"), `{"category":"network","key":"dns_servers","type":"array","value":["1.1.1.1"]}`; got != want {
		t.Errorf("stored with spaces: got %s, want %s", got, want)
	}
	st["sound.master_volume"] = []byte(`{not json`)
	if got, want := get("sound", "master_volume"), `{"category":"sound","key":"master_volume","type":"int","value":50}`; got != want {
		t.Errorf("damaged: got %s, want %s", got, want)
	}
	for _, bad := range []string{`{"category":"display","key":"nope"}`, `{"category":"nope","key":"brightness"}`, `[]`} {
		if _, err := app.Invoke(ctx, settings.GetID, json.RawMessage(bad), sdk.InvocationContext{}); sdk.AsError(err, settings.GetID).Code != sdk.CodeInvalidParams {
			t.Errorf("%s: got %v, want invalid params", bad, err)
		}
	}
}
