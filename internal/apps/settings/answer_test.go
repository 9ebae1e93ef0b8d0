package settings

import (
	"encoding/json"
	"testing"
)

// getResult is get_setting's answer as a struct; its fields are in the order of their names,
// as a map's would be.
type getResult struct {
	Category string          `json:"category"`
	Key      string          `json:"key"`
	Type     string          `json:"type"`
	Value    json.RawMessage `json:"value"`
}

// getAnswer, built by hand, is getResult's JSON for every setting and its default, and for
// stored values.
func TestGetAnswer(t *testing.T) {
	for c, keys := range domains {
		for k, kd := range keys {
			for _, v := range []json.RawMessage{defaults[c][k], json.RawMessage(`"x\u00e9\"y"`), json.RawMessage(`[1,2.5,{"a":null}]`), json.RawMessage(` [ 1 , {"b" : true} ] `)} {
				want, err := json.Marshal(getResult{Category: c, Key: k, Type: kd.typ, Value: v})
				if err != nil {
					t.Fatal(err)
				}
				if got := getAnswer(c, k, v); string(got) != string(want) {
					t.Errorf("%s.%s: %s, want %s", c, k, got, want)
				}
			}
		}
	}
}
