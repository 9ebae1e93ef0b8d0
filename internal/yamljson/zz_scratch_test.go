package yamljson

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestScratchSuite(t *testing.T) {
	dir := os.Getenv("SUITE")
	if dir == "" {
		t.Skip()
	}
	var names []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if info != nil && !info.IsDir() && filepath.Base(p) == "in.yaml" {
			names = append(names, filepath.Dir(p))
		}
		return nil
	})
	sort.Strings(names)
	var ok, refusedValid, mismatch, acceptedInvalid, multi int
	for _, d := range names {
		name := strings.TrimPrefix(d, dir+"/")
		in, _ := os.ReadFile(filepath.Join(d, "in.yaml"))
		_, errFile := os.Stat(filepath.Join(d, "error"))
		isErr := errFile == nil
		js, jerr := os.ReadFile(filepath.Join(d, "in.json"))
		out, err := Convert(in)
		if isErr {
			if err == nil {
				acceptedInvalid++
				t.Logf("ACCEPTED-INVALID %s: %s", name, out)
			}
			continue
		}
		if jerr != nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.UseNumber()
		var vals []any
		for {
			var v any
			if e := dec.Decode(&v); e != nil {
				if e != io.EOF {
					t.Logf("bad json %s", name)
				}
				break
			}
			vals = append(vals, v)
		}
		if len(vals) != 1 {
			multi++
			continue
		}
		if err != nil {
			refusedValid++
			t.Logf("REFUSED %s: %v", name, err)
			continue
		}
		d2 := json.NewDecoder(bytes.NewReader(out))
		d2.UseNumber()
		var got any
		if e := d2.Decode(&got); e != nil {
			t.Errorf("INVALID JSON %s: %s", name, out)
			continue
		}
		if !reflect.DeepEqual(normalize(got), normalize(vals[0])) {
			mismatch++
			t.Logf("MISMATCH %s:\n got %s\nwant %s", name, out, bytes.TrimSpace(js))
			continue
		}
		ok++
	}
	t.Logf("ok=%d refusedValid=%d mismatch=%d acceptedInvalid=%d multi=%d", ok, refusedValid, mismatch, acceptedInvalid, multi)
}

// normalize turns json.Number into canonical float text for comparison.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, x := range v {
			v[k] = normalize(x)
		}
	case []any:
		for i, x := range v {
			v[i] = normalize(x)
		}
	}
	return v
}
