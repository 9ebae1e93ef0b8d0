package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const diaryID = "org.example.diary"

// diaryManifest reads the weather, the person's memory and their health records.
const diaryManifest = `{"app_id":"org.example.diary","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"diary.org.example.diary.weather","name":"Weather","description":"Today's weather.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","data_classes":["public.weather"]},
 {"id":"diary.org.example.diary.recall","name":"Recall","description":"What the person told the diary.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","data_classes":["memory.entries"]},
 {"id":"diary.org.example.diary.health","name":"Health","description":"The person's health records.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","data_classes":["health.records"]}
]}`

type diaryApp struct {
	doc   atomic.Pointer[manifest.Document]
	calls atomic.Int64
}

func (d *diaryApp) Manifest() *manifest.Document { return d.doc.Load() }

func (d *diaryApp) Invoke(context.Context, string, json.RawMessage, sdk.InvocationContext) (sdk.Result, error) {
	d.calls.Add(1)
	return sdk.Result{Success: true, Data: json.RawMessage(`{"ok":true}`)}, nil
}

// Another assistant gets only what the definitions document lets other assistants have: one
// whose provider stores or trains on data never sees nor calls a capability of personal
// context; one that does neither does; neither reaches a sensitive data class. The person's
// own agent reaches all three. A refused call never reaches the app.
func TestOutsideAssistantsDataClasses(t *testing.T) {
	t.Parallel()
	diary := &diaryApp{}
	e := newEnv(t, options{handlers: map[string]sdk.Handler{diaryID: diary}})
	diary.doc.Store(e.register(diaryID, diaryManifest, "diary").Doc)
	mine := e.addClient("mine", "user")
	keeps := e.putClientAs(store.Client{Name: "keeps", Trust: "user", Assistant: "keeps"})
	private := e.putClientAs(store.Client{Name: "private", Trust: "user", Assistant: "private"})
	for _, c := range []struct {
		a       agent
		allowed map[string]bool
	}{
		{mine, map[string]bool{"weather": true, "recall": true, "health": true}},
		{private, map[string]bool{"weather": true, "recall": true}},
		{keeps, map[string]bool{"weather": true}},
	} {
		listed := e.listed(c.a, true)
		for _, m := range []string{"weather", "recall", "health"} {
			id := "diary.org.example.diary." + m
			if _, ok := listed[id]; ok != c.allowed[m] {
				t.Errorf("%s: %s listed %v (all=1)", c.a.Name, m, ok)
			}
			before := diary.calls.Load()
			r := e.callApp(c.a, "diary", m, `{}`, "")
			switch {
			case c.allowed[m]:
				wantOK(t, c.a.Name+" "+m, r)
			default:
				wantCode(t, c.a.Name+" "+m, r, "PERMISSION_DENIED")
				if !strings.Contains(r.Body.ErrorMessage, "another assistant") || diary.calls.Load() != before {
					t.Errorf("%s %s: %q, the app called %d times", c.a.Name, m, r.Body.ErrorMessage, diary.calls.Load()-before)
				}
			}
		}
	}
	if tools := e.mcpTools(keeps); tools["diary__recall"] || tools["diary__health"] || !tools["diary__weather"] {
		t.Errorf("MCP lists for the assistant that keeps data: %v", tools)
	}
}
