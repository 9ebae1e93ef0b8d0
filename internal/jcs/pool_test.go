package jcs

import (
	"strings"
	"sync"
	"testing"
)

// TestParsersShareNothing parses documents one after another and at once, on the pooled
// parsers, a huge one among them, and checks that no Value changes when later documents are
// parsed: each owns its elements.
func TestParsersShareNothing(t *testing.T) {
	docs := []string{
		`{"a":[1,2,{"b":"c"}],"d":"e"}`,
		`[` + strings.Repeat(`{"x":"y"},`, 5000) + `{"x":"z"}]`,
		`{"k":"v","l":["m","n"]}`,
		`"just a string"`,
	}
	canon := func(v Value) string {
		b, err := v.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var vals []Value
	var want []string
	for range 3 {
		for _, d := range docs {
			v, err := Parse([]byte(d), nil)
			if err != nil {
				t.Fatal(err)
			}
			vals, want = append(vals, v), append(want, canon(v))
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for _, d := range docs {
					if _, err := Parse([]byte(d), nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for i, v := range vals {
		if got := canon(v); got != want[i] {
			t.Fatalf("value %d changed after later parses", i)
		}
	}
	if _, err := Parse([]byte(`{"a":1,"a":2}`), nil); err == nil {
		t.Fatal("a duplicate member name parsed on a pooled parser")
	}
}
