package provider_test

import (
	"context"
	"encoding/json"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

// notes is an app's handler: the same sdk.Handler a built-in app implements.
type notes struct{ doc *manifest.Document }

func (n notes) Manifest() *manifest.Document { return n.doc }

func (n notes) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	sdk.ReportEffect(ctx, "read", "the notes index")
	return sdk.Result{Success: true, Data: json.RawMessage(`{"notes":[]}`)}, nil
}

// A provider's main loads its signed manifest and serves its handler; capgate starts the
// program, checks the manifest it reports against the one installed, and calls it.
func ExampleServe() {
	signed := []byte(`{"app_id":"org.example.notes", "...": "the signed manifest"}`)
	doc, err := manifest.Load(signed)
	if err != nil {
		panic(err)
	}
	provider.Serve(notes{doc: doc})
}
