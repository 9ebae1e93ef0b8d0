package yamljson

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	goyaml "github.com/goccy/go-yaml"
)

func TestScratchCorpusDiff(t *testing.T) {
	dir := os.Getenv("CORPUS")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	rules := map[string]int{}
	accepted := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(string(b), "\n")
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		data, err := strconv.Unquote(s)
		if err != nil {
			continue
		}
		out, err := Convert([]byte(data))
		if err != nil {
			var e *Error
			errors.As(err, &e)
			rules[e.Rule]++
			if e.Rule == ruleParserFail || e.Rule == ruleQuotePos || e.Rule == ruleUnsupported || e.Rule == ruleQuoteDiffers || e.Rule == ruleDropped {
				t.Logf("RULE %s: %q", e.Rule, data)
			}
			continue
		}
		accepted++
		var mine any
		json.Unmarshal(out, &mine)
		var theirs any
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Logf("goccy Unmarshal panic on %q", data)
				}
			}()
			if err := goyaml.Unmarshal([]byte(data), &theirs); err != nil {
				t.Logf("goccy refuses what we accept: %q -> %s (%v)", data, out, strings.SplitN(err.Error(), "\n", 2)[0])
				return
			}
			tj, err := json.Marshal(normY(theirs))
			if err != nil {
				t.Logf("goccy value not JSON-able %q: %v", data, err)
				return
			}
			var th any
			json.Unmarshal(tj, &th)
			if !reflect.DeepEqual(mine, th) {
				t.Logf("DIFF %q\n  mine   %s\n  goccy  %s", data, out, tj)
			}
		}()
	}
	var keys []string
	for k := range rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%6d %s", rules[k], k)
	}
	t.Logf("accepted %d of %d", accepted, len(files))
}

func normY(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normY(x)
		}
		return v
	case map[any]any:
		m := map[string]any{}
		for k, x := range v {
			m[fmt.Sprint(k)] = normY(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = normY(x)
		}
	}
	return v
}
