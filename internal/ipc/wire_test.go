package ipc

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/client/wire"
)

// TestWireCodes checks that the public wire form names every error code the code base
// answers with, and no other: a code added to policy or the broker without the client
// knowing it fails here.
func TestWireCodes(t *testing.T) {
	got, want := wire.Codes(), slices.Clone(errorCodes)
	slices.Sort(got)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("wire.Codes() = %v, want the codes the gateway answers with, %v", got, want)
	}
}

// TestWireSchemas checks that each wire type has the members docs/openapi.yaml gives its
// schema, no more and no fewer, so that the client and the document say the same.
func TestWireSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	for _, c := range []struct {
		schema string
		v      any
	}{
		{"RequestHeader", wire.Header{}}, {"ResponseHeader", wire.Header{}}, {"RequestBody", wire.Body{}},
		{"Problem", wire.Problem{}}, {"ConsentRef", wire.ConsentRef{}}, {"Tool", wire.Tool{}},
		{"CapabilityRequest", wire.CapabilityRequest{}}, {"Constraints", wire.Constraints{}},
		{"IssuedToken", wire.IssuedToken{}}, {"FlatError", wire.FlatError{}}, {"Explanation", wire.Explanation{}},
	} {
		m, _ := asMap(node(t, doc, "components", "schemas", c.schema, "properties"))
		var want []string
		for k := range m {
			want = append(want, k)
		}
		slices.Sort(want)
		if got := jsonMembers(reflect.TypeOf(c.v)); !slices.Equal(got, want) {
			t.Errorf("wire's %T has the members %v, the schema %s %v", c.v, got, c.schema, want)
		}
	}
}

// jsonMembers are the JSON member names of a struct type's fields, sorted.
func jsonMembers(ty reflect.Type) []string {
	var out []string
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if name != "-" && name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
