package calc

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"sync"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.calc"
	Alias = "calc"
)

// The capability ids: the token document's methods.
const (
	ComputeID  = "calc.org.capgate.calc.compute"
	GetValueID = "calc.org.capgate.calc.get_value"
)

// App is the Calculator app. Its zero value is not usable: call New. It is safe for
// concurrent use.
type App struct {
	doc *manifest.Document

	mu    sync.Mutex
	value *big.Rat // the last result; zero before any
}

var _ sdk.Handler = (*App)(nil)

// New returns the app with its manifest (as loaded and signed by the host). Its value starts
// at 0.
func New(doc *manifest.Document) *App { return &App{doc: doc, value: new(big.Rat)} }

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

type computeParams struct {
	Expression *string `json:"expression"`
}

// Invoke implements sdk.Handler.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	switch id {
	case ComputeID:
		var p computeParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object"}})
		}
		if p.Expression == nil {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "expression", Rule: "required"}})
		}
		v, err := evaluate(*p.Expression)
		if err != nil {
			var ee *ExprError
			if errors.As(err, &ee) {
				return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "expression", Rule: ee.Error()}})
			}
			return sdk.Result{}, sdk.ExecutionFailed("the expression could not be computed", false)
		}
		display := format(v)
		a.mu.Lock()
		a.value = v
		a.mu.Unlock()
		data, _ := json.Marshal(map[string]any{"result": json.Number(display), "expression": *p.Expression})
		return sdk.Result{Success: true, Data: data}, nil
	case GetValueID:
		a.mu.Lock()
		display := format(a.value)
		a.mu.Unlock()
		data, _ := json.Marshal(map[string]any{"value": json.Number(display), "display": display})
		return sdk.Result{Success: true, Data: data}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

// Manifest is the app's manifest, unsigned; the host signs it with its local app key.
const Manifest = `{
  "app_id": "org.capgate.calc",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "capabilities": [
    {
      "id": "calc.org.capgate.calc.compute",
      "name": "Compute",
      "description": "Computes an arithmetic expression exactly (+ - * / % ^, parentheses, decimals such as 1.5, .5 and 1e3) and makes its result the calculator's value. Results are shown in decimal, rounded to 12 digits after the point. Nothing in the expression is executed.",
      "category": "TEXT_QUERY",
      "parameters": {"type": "object", "required": ["expression"], "additionalProperties": false,
        "properties": {"expression": {"type": "string", "maxLength": 1024, "format": "text", "description": "An arithmetic expression, such as 123 + 456 * 2."}}},
      "returns": {"type": "object", "required": ["result", "expression"], "additionalProperties": false,
        "properties": {"result": {"type": "number"}, "expression": {"type": "string", "maxLength": 1024}}},
      "side_effects": "none",
      "auth_level": "user",
      "permission": "app.calc.compute",
      "risk": "low",
      "idempotency": "natural",
      "timeout_ms": 2000
    },
    {
      "id": "calc.org.capgate.calc.get_value",
      "name": "Read the calculator's value",
      "description": "Reads the calculator's current value, the result of the last computation (0 before any), as a number and as displayed.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "additionalProperties": false, "properties": {}},
      "returns": {"type": "object", "required": ["value", "display"], "additionalProperties": false,
        "properties": {"value": {"type": "number"}, "display": {"type": "string", "maxLength": 512}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.calc.read",
      "risk": "low",
      "idempotency": "natural"
    }
  ]
}`
