package calc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/apps/calc"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

func load(t testing.TB) *manifest.Document {
	t.Helper()
	doc, err := manifest.Load([]byte(calc.Manifest))
	if err != nil {
		t.Fatalf("manifest.Load: %v", err)
	}
	return doc
}

// call validates params as the gateway does, invokes, and checks the result against the
// capability's returns schema, as the gateway does too.
func call(t *testing.T, a *calc.App, id, params string) (map[string]any, error) {
	t.Helper()
	doc := a.Manifest()
	if err := sdk.DefaultValidateParams(doc, id, json.RawMessage(params)); err != nil {
		return nil, err
	}
	ic := sdk.InvocationContext{Source: sdk.SourceAgent, AppID: calc.AppID}
	res, err := a.Invoke(context.Background(), id, json.RawMessage(params), ic)
	if err != nil {
		return nil, err
	}
	if !res.Success {
		t.Fatalf("Invoke: success false without an error")
	}
	if err := doc.ReturnsSchema(id).ValidateJSON(res.Data, "result"); err != nil {
		t.Fatalf("result %s breaks the returns schema: %v", res.Data, err)
	}
	var out map[string]any
	d := json.NewDecoder(strings.NewReader(string(res.Data)))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func TestManifest(t *testing.T) {
	doc := load(t)
	m := doc.Manifest()
	if m.AppID != calc.AppID {
		t.Fatalf("app_id = %s", m.AppID)
	}
	want := map[string]struct {
		perm string
		risk manifest.Risk
		se   manifest.SideEffect
	}{
		calc.ComputeID:  {"app.calc.compute", manifest.RiskLow, manifest.SideEffectNone},
		calc.GetValueID: {"app.calc.read", manifest.RiskLow, manifest.SideEffectRead},
	}
	// Agents address calls by alias and the token document's method name.
	if calc.ComputeID != "calc."+calc.AppID+".compute" || calc.GetValueID != "calc."+calc.AppID+".get_value" || calc.Alias != "calc" {
		t.Fatal("capability ids are not {alias}.{app_id}.{method}")
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("%d capabilities", len(m.Capabilities))
	}
	for _, c := range m.Capabilities {
		w, ok := want[c.ID]
		if !ok || c.Permission != w.perm || c.Risk != w.risk || c.SideEffects != w.se {
			t.Errorf("%s: permission %s risk %s side effects %s", c.ID, c.Permission, c.Risk, c.SideEffects)
		}
		if c.AuthLevel != manifest.AuthUser {
			t.Errorf("%s: auth_level %s", c.ID, c.AuthLevel)
		}
	}
}

func TestComputeAndGetValue(t *testing.T) {
	a := calc.New(load(t))
	v, err := call(t, a, calc.GetValueID, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if v["value"] != json.Number("0") || v["display"] != "0" {
		t.Fatalf("value before any compute = %v", v)
	}
	tests := []struct{ expr, want string }{
		{"123 + 456 * 2", "1035"},
		{"0.1 + 0.2", "0.3"},
		{"1/3", "0.333333333333"},
		{"-7.5 * 2", "-15"},
		{"2^100", "1267650600228229401496703205376"},
	}
	for _, tt := range tests {
		params, _ := json.Marshal(map[string]string{"expression": tt.expr})
		out, err := call(t, a, calc.ComputeID, string(params))
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if out["result"] != json.Number(tt.want) || out["expression"] != tt.expr {
			t.Fatalf("%s = %v, want %s", tt.expr, out, tt.want)
		}
		v, err := call(t, a, calc.GetValueID, ``)
		if err != nil {
			t.Fatal(err)
		}
		if v["value"] != json.Number(tt.want) || v["display"] != tt.want {
			t.Fatalf("after %s: get_value = %v", tt.expr, v)
		}
	}
	// A failed computation leaves the value as it was.
	if _, err := call(t, a, calc.ComputeID, `{"expression":"1/0"}`); err == nil {
		t.Fatal("1/0 computed")
	}
	if v, _ := call(t, a, calc.GetValueID, `{}`); v["display"] != "1267650600228229401496703205376" {
		t.Fatalf("a failed compute changed the value: %v", v)
	}
}

func TestComputeErrors(t *testing.T) {
	a := calc.New(load(t))
	tests := []struct {
		name, params, path, rule string
		code                     sdk.Code
	}{
		{"division by zero", `{"expression":"4 / (2 - 2)"}`, "expression", "division by zero at 3", sdk.CodeInvalidParams},
		{"unbalanced open", `{"expression":"(1 + 2"}`, "expression", "unbalanced parenthesis at 1", sdk.CodeInvalidParams},
		{"unbalanced close", `{"expression":"1 + 2)"}`, "expression", "unbalanced parenthesis at 6", sdk.CodeInvalidParams},
		{"unexpected character", `{"expression":"1 + secret"}`, "expression", "unexpected character at 5", sdk.CodeInvalidParams},
		{"too large", `{"expression":"10^5000"}`, "expression", "number too large at 3", sdk.CodeInvalidParams},
		{"too deep", `{"expression":"` + strings.Repeat("(", 100) + `1` + strings.Repeat(")", 100) + `"}`, "expression", "too deeply nested (more than 64 levels) at 65", sdk.CodeInvalidParams},
		{"empty", `{"expression":""}`, "expression", "the expression is empty", sdk.CodeInvalidParams},
		{"blank", `{"expression":"  "}`, "expression", "the expression is empty", sdk.CodeInvalidParams},
		{"fractional power", `{"expression":"2^0.5"}`, "expression", "the exponent must be an integer at 2", sdk.CodeInvalidParams},
		// What the schema refuses before the app sees it.
		{"missing", `{}`, "", "", sdk.CodeInvalidParams},
		{"not a string", `{"expression":5}`, "expression", "", sdk.CodeInvalidParams},
		{"extra member", `{"expression":"1","eval":"x"}`, "", "", sdk.CodeInvalidParams},
		{"duplicate member", `{"expression":"1","expression":"2"}`, "", "", sdk.CodeInvalidParams},
		{"too long", `{"expression":"` + strings.Repeat("1", 1025) + `"}`, "expression", "", sdk.CodeInvalidParams},
		{"not JSON", `{"expression":`, "", "", sdk.CodeInvalidParams},
		{"get_value takes no params", `{"x":1}`, "", "", sdk.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := calc.ComputeID
			if strings.HasPrefix(tt.name, "get_value") {
				id = calc.GetValueID
			}
			_, err := call(t, a, id, tt.params)
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("err = %v, want code %s", err, tt.code)
			}
			if tt.path != "" && (len(e.Problems) == 0 || e.Problems[0].Path != tt.path) {
				t.Fatalf("problems = %v, want path %s", e.Problems, tt.path)
			}
			if tt.rule != "" && e.Problems[0].Rule != tt.rule {
				t.Fatalf("rule = %q, want %q", e.Problems[0].Rule, tt.rule)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error echoes the expression: %v", err)
			}
		})
	}
}

// The app checks what the schema checks too: a host that skips validation gets the same
// refusals, never a panic.
func TestInvokeWithoutValidation(t *testing.T) {
	a := calc.New(load(t))
	ctx := context.Background()
	for _, p := range []string{``, `null`, `[]`, `{}`, `{"expression":null}`, `{"expression":"` + strings.Repeat("9", 5000) + `"}`} {
		_, err := a.Invoke(ctx, calc.ComputeID, json.RawMessage(p), sdk.InvocationContext{})
		var e *sdk.Error
		if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams {
			t.Errorf("%.20s: err = %v", p, err)
		}
	}
	if _, err := a.Invoke(ctx, "calc.org.capgate.calc.eval", nil, sdk.InvocationContext{}); !isCode(err, sdk.CodeNotFound) {
		t.Errorf("unknown capability: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Invoke(done, calc.ComputeID, json.RawMessage(`{"expression":"1"}`), sdk.InvocationContext{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func isCode(err error, c sdk.Code) bool {
	var e *sdk.Error
	return errors.As(err, &e) && e.Code == c
}

// Many agents compute and read at once; run with -race. Every value read is one some
// computation produced.
func TestConcurrent(t *testing.T) {
	a := calc.New(load(t))
	valid := map[string]bool{"0": true}
	for i := range 8 {
		valid[string(rune('1'+i))] = true
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 50 {
				p, _ := json.Marshal(map[string]string{"expression": "(" + string(rune('1'+i)) + " * 3) / 3"})
				if _, err := a.Invoke(context.Background(), calc.ComputeID, p, sdk.InvocationContext{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				res, err := a.Invoke(context.Background(), calc.GetValueID, json.RawMessage(`{}`), sdk.InvocationContext{})
				if err != nil {
					t.Error(err)
					return
				}
				var v struct{ Display string }
				_ = json.Unmarshal(res.Data, &v)
				if !valid[v.Display] {
					t.Errorf("read %q, which no computation produced", v.Display)
					return
				}
			}
		}()
	}
	wg.Wait()
}
