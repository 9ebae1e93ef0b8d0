package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// notes is a tiny Tier 1 app on its own data model: a map of notes.
type notes struct {
	doc   *manifest.Document
	notes map[string]string
}

func (n *notes) Manifest() *manifest.Document { return n.doc }

func (n *notes) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	switch id {
	case "notes.org.example.notes.search":
		var p struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return sdk.Result{}, sdk.InvalidParams(nil)
		}
		var ids []string
		for k, v := range n.notes {
			if strings.Contains(v, p.Query) {
				ids = append(ids, k)
			}
		}
		data, _ := json.Marshal(map[string]any{"ids": ids})
		return sdk.Result{Success: true, Data: data}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func load(t *testing.T) *manifest.Document {
	t.Helper()
	doc, err := manifest.ReadFile("../manifest/testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	if ps := doc.Validate(); len(ps) > 0 {
		t.Fatal(ps)
	}
	return doc
}

func TestDefaultValidateParams(t *testing.T) {
	h := &notes{doc: load(t), notes: map[string]string{"1": "buy milk"}}
	const search = "notes.org.example.notes.search"
	tests := []struct {
		name   string
		id     string
		params string
		code   sdk.Code
		path   string
	}{
		{"valid", search, `{"query":"milk"}`, "", ""},
		{"valid with limit", search, `{"query":"milk","limit":5}`, "", ""},
		{"missing required", search, `{}`, sdk.CodeInvalidParams, ""},
		{"wrong type", search, `{"query":5}`, sdk.CodeInvalidParams, "query"},
		{"above maximum", search, `{"query":"x","limit":1000}`, sdk.CodeInvalidParams, "limit"},
		{"extra member", search, `{"query":"x","sql":"drop"}`, sdk.CodeInvalidParams, ""},
		// A duplicate member could be checked as one value and read as the other.
		{"duplicate member", search, `{"query":"x","query":5}`, sdk.CodeInvalidParams, ""},
		{"not JSON", search, `{"query":`, sdk.CodeInvalidParams, ""},
		{"unknown capability", "notes.org.example.notes.nope", `{}`, sdk.CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sdk.ValidateParams(h, tt.id, json.RawMessage(tt.params))
			if tt.code == "" {
				if err != nil {
					t.Fatalf("ValidateParams = %v", err)
				}
				return
			}
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("ValidateParams = %v, want code %s", err, tt.code)
			}
			if tt.path != "" && (len(e.Problems) == 0 || e.Problems[0].Path != tt.path) {
				t.Fatalf("problems = %v, want path %s", e.Problems, tt.path)
			}
			if strings.Contains(err.Error(), "drop") || strings.Contains(err.Error(), "1000") {
				t.Fatalf("error echoes the value: %v", err)
			}
		})
	}
}

// strict overrides the default validation with a business rule on top of it.
type strict struct{ *notes }

func (s strict) ValidateParams(id string, params json.RawMessage) error {
	if err := sdk.DefaultValidateParams(s.doc, id, params); err != nil {
		return err
	}
	if strings.Contains(string(params), "secret") {
		return sdk.PermissionDenied("this app does not search for secrets")
	}
	return nil
}

func TestParamValidatorOverride(t *testing.T) {
	h := strict{&notes{doc: load(t)}}
	err := sdk.ValidateParams(h, "notes.org.example.notes.search", json.RawMessage(`{"query":"secret"}`))
	var e *sdk.Error
	if !errors.As(err, &e) || e.Code != sdk.CodePermissionDenied {
		t.Fatalf("override not used: %v", err)
	}
}

func TestInvokeAndErrorCodes(t *testing.T) {
	h := &notes{doc: load(t), notes: map[string]string{"1": "buy milk", "2": "call mum"}}
	res, err := h.Invoke(context.Background(), "notes.org.example.notes.search", json.RawMessage(`{"query":"milk"}`), sdk.InvocationContext{Source: sdk.SourceAgent, AppID: "org.example.notes"})
	if err != nil || !res.Success || string(res.Data) != `{"ids":["1"]}` {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	codes := map[error]string{
		sdk.NotFound("x"):                            "METHOD_NOT_FOUND",
		sdk.InvalidParams(nil):                       "INVALID_REQUEST",
		sdk.PermissionDenied("no"):                   "PERMISSION_DENIED",
		sdk.Timeout("x", 5):                          "TIMEOUT",
		sdk.ExecutionFailed("disk", true):            "EXECUTION_FAILED",
		sdk.AppUnresponsive("a.b"):                   "EXECUTION_FAILED",
		context.DeadlineExceeded:                     "TIMEOUT",
		fmt.Errorf("wrapped: %w", sdk.NotFound("x")): "METHOD_NOT_FOUND",
		errors.New("password=hunter2"):               "EXECUTION_FAILED",
	}
	for err, want := range codes {
		e := sdk.AsError(err, "x")
		if got := e.Code.GatewayCode(); got != want {
			t.Errorf("%v → %s, want %s", err, got, want)
		}
		if strings.Contains(e.Error(), "hunter2") {
			t.Errorf("an arbitrary error's text reached the agent: %v", e)
		}
	}
	if sdk.AsError(nil, "x") != nil {
		t.Error("AsError(nil) != nil")
	}
}

// The gateway validates params of many calls at once against one manifest.
func TestValidateParamsConcurrently(t *testing.T) {
	doc, err := manifest.ReadFile("../manifest/testdata/notes.json") // not yet validated
	if err != nil {
		t.Fatal(err)
	}
	h := &notes{doc: doc}
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() {
			done <- sdk.ValidateParams(h, "notes.org.example.notes.search", json.RawMessage(`{"query":"x"}`))
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// lenient has rules of its own and forgets the schema: the schema is checked all the same.
type lenient struct {
	*notes
	asked *int
}

func (l lenient) ValidateParams(id string, params json.RawMessage) error {
	*l.asked++
	if strings.Contains(string(params), `"limit":3`) {
		return sdk.InvalidParams(manifest.Problems{{Path: "limit", Rule: "must not be three"}})
	}
	return nil
}

// Issue 16: a ParamValidator runs after the schema, never instead of it.
func TestParamValidatorAfterTheSchema(t *testing.T) {
	asked := 0
	h := lenient{&notes{doc: load(t)}, &asked}
	const search = "notes.org.example.notes.search"
	var e *sdk.Error
	if err := sdk.ValidateParams(h, search, json.RawMessage(`{"query":5}`)); !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams || asked != 0 {
		t.Fatalf("params that break the schema: %v (the validator was asked %d times)", err, asked)
	}
	if err := sdk.ValidateParams(h, search, json.RawMessage(`{"query":"x","limit":3}`)); !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Path != "limit" {
		t.Fatalf("the handler's rule: %v", err)
	}
	if err := sdk.ValidateParams(h, search, json.RawMessage(`{"query":"x","limit":4}`)); err != nil || asked != 2 {
		t.Fatalf("params that keep both: %v (asked %d times)", err, asked)
	}
}
