package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// exampleKB is the example knowledge base's search, in process.
type exampleKB struct{ doc *manifest.Document }

func (h exampleKB) Manifest() *manifest.Document { return h.doc }

func (h exampleKB) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	if !strings.HasSuffix(id, ".search") {
		return sdk.Result{}, sdk.NotFound(id)
	}
	var p struct{ Query string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(nil)
	}
	sdk.ReportEffect(ctx, "read", "the index")
	hits := []string{}
	for _, title := range []string{"Onboarding checklist", "The release process"} {
		if strings.Contains(strings.ToLower(title), strings.ToLower(p.Query)) {
			hits = append(hits, title)
		}
	}
	data, _ := json.Marshal(map[string]any{"hits": hits})
	return sdk.Result{Success: true, Data: data}, nil
}

// The example host's basic suite, run against the example knowledge base: search passes;
// reindex claims no suite.
func ExampleRun() {
	reg, err := port.LoadDir("../../examples/plugins/ports")
	if err != nil {
		panic(err)
	}
	doc, err := manifest.ReadFile("../../examples/plugins/kb-1.0.0/manifest.json")
	if err != nil {
		panic(err)
	}
	results, err := conformance.Run(context.Background(), exampleKB{doc}, reg, nil)
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Println(r)
	}
	// Output:
	// kb.org.example.kb.search: passed
	// kb.org.example.kb.reindex: no_suite: the capability declares no conformance_suite
}
