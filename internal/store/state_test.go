package store

import (
	"errors"
	"testing"
)

// fakeRows is a query's result of (key, value) rows, as a driver would give them: a value the
// database holds empty may come back nil.
type fakeRows struct {
	keys   []string
	values [][]byte
	i      int
	err    error // from Err, once the rows are read
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.keys) }
func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Scan(dest ...any) error {
	*dest[0].(*string) = r.keys[r.i-1]
	*dest[1].(*[]byte) = r.values[r.i-1]
	return nil
}

func TestCollectState(t *testing.T) {
	rows := &fakeRows{
		keys:   []string{"a/", "a/1", "a/%", "a0", "A/2", "a", "b/"},
		values: [][]byte{[]byte("x"), nil, []byte("%"), []byte("no"), []byte("no"), []byte("no"), []byte("no")},
	}
	got, err := CollectState(rows, "a/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a/": "x", "a/1": "", "a/%": "%"}
	if len(got) != len(want) {
		t.Errorf("CollectState = %q, want %q", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g == nil || string(g) != v {
			t.Errorf("key %q: %q (present %v), want %q and not nil", k, g, ok, v)
		}
	}
	broken := errors.New("connection lost")
	if _, err := CollectState(&fakeRows{err: broken}, ""); !errors.Is(err, broken) {
		t.Errorf("a result that failed: %v", err)
	}
}

func TestCheckCreate(t *testing.T) {
	if err := CheckCreate(nil); err == nil {
		t.Error("CheckCreate(nil) = nil")
	}
	for _, v := range [][]byte{{}, []byte("v")} {
		if err := CheckCreate(v); err != nil {
			t.Errorf("CheckCreate(%q) = %v", v, err)
		}
	}
	if v := StateValue(nil); v == nil || len(v) != 0 {
		t.Errorf("StateValue(nil) = %#v, want empty and not nil", v)
	}
}
