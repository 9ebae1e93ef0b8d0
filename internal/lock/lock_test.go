package lock_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/manifest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	f := testFile(t)
	if err := lock.Save(dir, f); err != nil {
		t.Fatal(err)
	}
	got, err := lock.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("Load after Save differs:\n got %+v\nwant %+v", got, f)
	}
	for name, e := range got.Plugins {
		doc, err := manifest.Parse(e.Manifest)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(doc.Raw(), e.Manifest) {
			t.Errorf("%s: manifest is not its Raw form", name)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode = %v, %v; want 0700", st.Mode().Perm(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, lock.FileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	// Saving what was loaded writes the same bytes.
	before, _ := os.ReadFile(filepath.Join(dir, lock.FileName))
	if err := lock.Save(dir, got); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, lock.FileName))
	if !bytes.Equal(before, after) {
		t.Error("Save(Load()) changed the file")
	}
}

func TestLoadMissing(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "no", "such")} {
		f, err := lock.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f, lock.New()) || f.Version != 1 || f.Plugins == nil || f.Pending == nil {
			t.Errorf("Load of a missing file = %+v, want an empty version 1 lockfile", f)
		}
	}
}

// The encoding is pinned by a golden file: a change to it is a format change.
func TestGolden(t *testing.T) {
	got, err := lock.Encode(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "small.lock.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Encode differs from %s (run with -update if the change is intended):\n%s", golden, got)
	}
}

func TestEncodeDeterministic(t *testing.T) {
	want, err := lock.Encode(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(want, []byte("}\n")) || !bytes.Contains(want, []byte("\n  \"plugins\": {\n")) {
		t.Errorf("not indented with a trailing newline:\n%s", want)
	}
	if bytes.Contains(want, []byte(`\u003c`)) || bytes.Contains(want, []byte(`\u2028`)) {
		t.Error("HTML escaping rewrote a manifest")
	}
	zone := time.FixedZone("X", 5*3600+1800)
	for i := range 20 {
		// Maps filled in another order, times in another zone: the same lockfile.
		f := testFile(t)
		g := lock.New()
		keys := []string{"org.example.unsigned", "org.example.notes"}
		if i%2 == 0 {
			keys[0], keys[1] = keys[1], keys[0]
		}
		for _, k := range keys {
			e := f.Plugins[k]
			e.InstalledAt = e.InstalledAt.In(zone)
			g.Plugins[k] = e
		}
		g.Pending = f.Pending
		got, err := lock.Encode(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("run %d: Encode gave other bytes", i)
		}
	}
	// A nil Pending is written like an empty one, and nil Plugins as {}.
	f := testFile(t)
	f.Pending = nil
	a, _ := lock.Encode(f)
	f.Pending = map[string]lock.Pending{}
	b, _ := lock.Encode(f)
	if !bytes.Equal(a, b) || bytes.Contains(a, []byte(`"pending"`)) {
		t.Error("nil and empty Pending encode differently")
	}
	empty, err := lock.Encode(&lock.File{Version: 1})
	if err != nil || string(empty) != "{\n  \"lockfile_version\": 1,\n  \"plugins\": {}\n}\n" {
		t.Errorf("empty lockfile = %q, %v", empty, err)
	}
}

// edit returns the encoded test file after fn has changed its generic JSON form.
func edit(t *testing.T, fn func(root map[string]any)) []byte {
	t.Helper()
	data, err := lock.Encode(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	fn(root)
	// Without SetEscapeHTML(false), encoding/json would rewrite "<" in every manifest to
	// \u003c, which is not canonical: the very thing Encode must avoid.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		t.Fatal(err)
	}
	// encoding/json escapes U+2028 in every string it writes; the canonical form does not.
	return bytes.ReplaceAll(out.Bytes(), []byte(`\u2028`), []byte("\u2028"))
}

func notes(root map[string]any) map[string]any {
	return root["plugins"].(map[string]any)["org.example.notes"].(map[string]any)
}

func pendingNotes(root map[string]any) map[string]any {
	return root["pending"].(map[string]any)["org.example.notes"].(map[string]any)
}

func setNotes(field string, v any) func(map[string]any) {
	return func(root map[string]any) { notes(root)[field] = v }
}

func TestLoadCorrupt(t *testing.T) {
	valid, err := lock.Encode(testFile(t))
	if err != nil {
		t.Fatal(err)
	}
	notesKey := `plugins["org.example.notes"]`
	tests := []struct {
		name string
		data []byte
		want []string // substrings of the error: the entry and the field
		is   error
	}{
		{"truncated", valid[:len(valid)/2], []string{"offset"}, jcs.ErrSyntax},
		{"empty", nil, []string{"empty input"}, jcs.ErrSyntax},
		{"not JSON", []byte("lockfile " + secret), []string{"offset 0"}, jcs.ErrSyntax},
		{"not an object", []byte(`["` + secret + `"]`), []string{"must be a JSON object"}, nil},
		{"byte order mark", append([]byte("\xef\xbb\xbf"), valid...), []string{"byte order mark"}, jcs.ErrSyntax},
		{"invalid UTF-8", bytes.Replace(valid, []byte("alice"), []byte("al\xffce"), 1), []string{notesKey + ".approved_by"}, jcs.ErrInvalidUTF8},
		{"lone surrogate", bytes.Replace(valid, []byte("alice"), []byte(`al\udc00ce`), 1), []string{notesKey + ".approved_by"}, jcs.ErrLoneSurrogate},
		{"duplicate key", bytes.Replace(valid, []byte(`"app_id": "org.example.notes",`),
			[]byte(`"app_id": "org.example.notes", "digest": "`+secret+`",`), 1), []string{notesKey}, jcs.ErrDuplicateKey},
		{"duplicate entry", bytes.Replace(valid, []byte(`"plugins": {`), []byte(`"plugins": {"org.example.unsigned": {},`), 1), []string{"plugins"}, jcs.ErrDuplicateKey},
		{"unknown version", edit(t, func(r map[string]any) { r["lockfile_version"] = json.Number("2") }), []string{"lockfile_version"}, lock.ErrVersion},
		{"version as text", edit(t, func(r map[string]any) { r["lockfile_version"] = "1" }), []string{"lockfile_version"}, lock.ErrVersion},
		{"version 1.0", edit(t, func(r map[string]any) { r["lockfile_version"] = json.Number("1.0") }), []string{"lockfile_version"}, lock.ErrVersion},
		{"no version", edit(t, func(r map[string]any) { delete(r, "lockfile_version") }), []string{"lockfile_version"}, lock.ErrVersion},
		{"unknown field", edit(t, setNotes("extra", secret)), []string{notesKey + ".extra", "unknown member"}, nil},
		{"unknown odd field", edit(t, setNotes(secret+" name", 1)), []string{notesKey + ": unknown member"}, nil},
		{"case-folded field", edit(t, func(r map[string]any) { n := notes(r); n["App_ID"] = n["app_id"]; delete(n, "app_id") }), []string{notesKey + ".App_ID", "unknown member"}, nil},
		{"unknown top-level field", edit(t, func(r map[string]any) { r["plugin"] = map[string]any{} }), []string{"plugin: unknown member"}, nil},
		{"null plugins", edit(t, func(r map[string]any) { r["plugins"] = nil }), []string{"plugins: must be an object"}, nil},
		{"missing plugins", edit(t, func(r map[string]any) { delete(r, "plugins") }), []string{"plugins: missing"}, nil},
		{"missing field", edit(t, func(r map[string]any) { delete(notes(r), "installed_at") }), []string{notesKey + ".installed_at: missing"}, nil},
		{"null field", edit(t, setNotes("digest", nil)), []string{notesKey + ".digest: must be a string"}, nil},
		{"bad digest", edit(t, setNotes("digest", "sha256:"+secret)), []string{notesKey + ".digest"}, manifest.ErrSyntax},
		{"upper-case digest", edit(t, setNotes("digest", strings.ToUpper(digestOf("x")))), []string{notesKey + ".digest"}, manifest.ErrSyntax},
		{"bad signer", edit(t, setNotes("signer", "ed25519:"+secret)), []string{notesKey + ".signer"}, manifest.ErrSyntax},
		{"tier 1 unsigned", edit(t, setNotes("signer", "")), []string{notesKey + ".signer: must be set at tier 1"}, nil},
		{"tier 3", edit(t, setNotes("tier", json.Number("3"))), []string{notesKey + ".tier"}, nil},
		{"tier as text", edit(t, setNotes("tier", "1")), []string{notesKey + ".tier: must be an integer"}, nil},
		{"tier fraction", edit(t, setNotes("tier", json.Number("1.5"))), []string{notesKey + ".tier: must be an integer"}, nil},
		{"bad version", edit(t, setNotes("version", "01.4.0-"+secret)), []string{notesKey + ".version"}, manifest.ErrSyntax},
		{"bad time", edit(t, setNotes("installed_at", "yesterday "+secret)), []string{notesKey + ".installed_at: must be an RFC 3339 time"}, nil},
		{"bad key", edit(t, func(r map[string]any) {
			p := r["plugins"].(map[string]any)
			p["Bad Key "+secret] = p["org.example.unsigned"]
			delete(p, "org.example.unsigned")
		}), []string{`plugins[#0]: key is not a valid app id`}, manifest.ErrSyntax},
		{"key mismatch", edit(t, func(r map[string]any) {
			p := r["plugins"].(map[string]any)
			p["org.example.other"] = p["org.example.unsigned"]
			delete(p, "org.example.unsigned")
		}), []string{`plugins["org.example.other"].app_id: must equal the entry's key`}, nil},
		{"manifest not canonical", edit(t, setNotes("manifest", json.RawMessage(`{"version":"1.4.0","app_id":"org.example.notes","capabilities":[]}`))),
			[]string{notesKey + ".manifest: must be in RFC 8785 canonical form"}, nil},
		{"manifest with escapes", edit(t, setNotes("manifest", json.RawMessage(`{"\u0061pp_id":"org.example.notes","capabilities":[],"version":"1.4.0"}`))),
			[]string{notesKey + ".manifest: must be in RFC 8785 canonical form"}, nil},
		{"manifest number form", edit(t, setNotes("manifest", json.RawMessage(`{"app_id":"org.example.notes","capabilities":[],"n":1.0,"version":"1.4.0"}`))),
			[]string{notesKey + ".manifest: must be in RFC 8785 canonical form"}, nil},
		{"manifest not an object", edit(t, setNotes("manifest", []any{secret})), []string{notesKey + ".manifest: must be a JSON object"}, nil},
		{"manifest app_id mismatch", edit(t, setNotes("manifest", testManifest(t, "org.example.other", "1.4.0", 1))),
			[]string{notesKey + ".manifest.app_id: must equal the entry's app_id"}, nil},
		{"manifest version mismatch", edit(t, setNotes("manifest", testManifest(t, "org.example.notes", "1.4.1", 1))),
			[]string{notesKey + ".manifest.version: must equal the entry's version"}, nil},
		{"manifest inexact number", edit(t, setNotes("manifest", json.RawMessage(`{"app_id":"org.example.notes","n":9007199254740993,"version":"1.4.0"}`))),
			[]string{notesKey + ".manifest: must be in RFC 8785 canonical form"}, nil},
		{"pending entry digest", edit(t, func(r map[string]any) { pendingNotes(r)["entry"].(map[string]any)["digest"] = secret }),
			[]string{`pending["org.example.notes"].entry.digest`}, manifest.ErrSyntax},
		{"pending unknown field", edit(t, func(r map[string]any) { pendingNotes(r)["entry"].(map[string]any)["x"] = 1 }),
			[]string{`pending["org.example.notes"].entry.x: unknown member`}, nil},
		{"pending changes duplicate", bytes.Replace(valid, []byte(`"note": "<&>"`), []byte(`"note": "<&>", "note": "`+secret+`"`), 1),
			[]string{`pending["org.example.notes"].changes`}, jcs.ErrDuplicateKey},
		{"pending no since", edit(t, func(r map[string]any) { delete(pendingNotes(r), "since") }), []string{`pending["org.example.notes"].since: missing`}, nil},
		{"pending null", edit(t, func(r map[string]any) { r["pending"] = nil }), []string{"pending: must be an object"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, lock.FileName), tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := lock.Load(dir)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", f)
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			var le *lock.Error
			if !errors.As(err, &le) {
				t.Errorf("error %v is not a *lock.Error", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			// Neither the error nor anything it wraps echoes a value.
			for e := error(err); e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), secret) || strings.Contains(e.Error(), "alice") {
					t.Errorf("error echoes a value: %q", e.Error())
				}
			}
		})
	}
}

func TestSaveRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	good := testFile(t)
	if err := lock.Save(dir, good); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, lock.FileName))
	tests := map[string]func(f *lock.File){
		"version 0":    func(f *lock.File) { f.Version = 0 },
		"key mismatch": func(f *lock.File) { f.Plugins["org.example.x"] = f.Plugins["org.example.notes"] },
		"manifest indented": func(f *lock.File) {
			e := f.Plugins["org.example.notes"]
			e.Manifest = manifestIndented(t, e.Manifest)
			f.Plugins[e.AppID] = e
		},
		"no manifest": func(f *lock.File) { e := f.Plugins["org.example.notes"]; e.Manifest = nil; f.Plugins[e.AppID] = e },
		"no time": func(f *lock.File) {
			e := f.Plugins["org.example.notes"]
			e.InstalledAt = time.Time{}
			f.Plugins[e.AppID] = e
		},
		"year 10000": func(f *lock.File) {
			e := f.Plugins["org.example.notes"]
			e.InstalledAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			f.Plugins[e.AppID] = e
		},
		"source not UTF-8": func(f *lock.File) { e := f.Plugins["org.example.notes"]; e.Source = "\xff"; f.Plugins[e.AppID] = e },
		"source too long": func(f *lock.File) {
			e := f.Plugins["org.example.notes"]
			e.Source = strings.Repeat("a", lock.MaxSourceBytes+1)
			f.Plugins[e.AppID] = e
		},
		"changes not JSON": func(f *lock.File) {
			p := f.Pending["org.example.notes"]
			p.Changes = json.RawMessage("{")
			f.Pending["org.example.notes"] = p
		},
		"changes missing": func(f *lock.File) {
			p := f.Pending["org.example.notes"]
			p.Changes = nil
			f.Pending["org.example.notes"] = p
		},
		"pending key differs": func(f *lock.File) { f.Pending["org.example.other"] = f.Pending["org.example.notes"] },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			f := testFile(t)
			mutate(f)
			err := lock.Save(dir, f)
			var le *lock.Error
			if !errors.As(err, &le) {
				t.Fatalf("Save = %v, want a *lock.Error", err)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, lock.FileName)); !bytes.Equal(before, after) {
				t.Fatal("a refused Save changed the file")
			}
		})
	}
	if err := lock.Save(dir, nil); err == nil {
		t.Error("Save(nil) succeeded")
	}
}

func manifestIndented(t *testing.T, m json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Indent(&b, m, "", " "); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A problem in every entry is reported for every entry, up to a bound.
func TestValidateReportsAll(t *testing.T) {
	f := bigFile(t, 50, 1, "1.0.0")
	for k, e := range f.Plugins {
		e.Digest = ""
		f.Plugins[k] = e
	}
	err := f.Validate()
	var n int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if le := e.(*lock.Error); strings.HasSuffix(le.Field, "digest") {
			n++
		}
	}
	if n != 32 || !strings.Contains(err.Error(), "more problems not listed") {
		t.Errorf("%d digest problems reported, want the first 32 and a note:\n%v", n, err)
	}
}
