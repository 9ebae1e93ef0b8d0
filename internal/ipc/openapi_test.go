package ipc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/token"
)

// apiRoutes is every route Server.Handler registers, as "METHOD /path". An http.ServeMux
// cannot list its patterns, so keep this in step with Handler: TestOpenAPIRoutes checks that
// each one is served and documented, and that the document has no other operation.
var apiRoutes = []string{
	"POST /v1/ipc",
	"POST /v1/explain",
	"POST /v1/tokens/revoke",
	"POST /v1/tokens/derive",
	"GET /v1/capabilities",
	"POST /v1/capabilities/request",
	"POST /v1/definitions/negotiate",
	"POST /v1/plan/candidates",
	"POST /v1/plan/route",
	"POST /v1/plan/call",
	"POST /v1/triggers",
	"GET /v1/triggers",
	"GET /v1/triggers/{id}",
	"POST /v1/triggers/{id}/reply",
	"POST /v1/hooks/{id}",
	"GET /healthz",
}

// gatewayRoutes are documented routes that internal/gateway serves in front of Handler, on
// the same listeners; they are not Handler's.
var gatewayRoutes = []string{"GET /metrics"}

// publicRoutes need no client key.
var publicRoutes = map[string]bool{"GET /healthz": true, "GET /metrics": true, "POST /v1/hooks/{id}": true}

// signedRoutes are public routes authenticated by a signature of their own (a trigger's
// webhook): without a trigger engine they answer 503, and they document their 401.
var signedRoutes = map[string]bool{"POST /v1/hooks/{id}": true}

// errorCodes is every error code the code base answers with: policy's, the broker's and the
// envelope's.
var errorCodes = []string{
	policy.CodeAppNotFound, policy.CodeMethodNotFound, policy.CodeInvalidToken, policy.CodeTokenExpired,
	policy.CodeTokenExhausted, policy.CodeInvalidRequest, policy.CodePermissionDenied,
	policy.CodeCapabilityDenied, policy.CodeConsentRequired, policy.CodeConsentDenied, policy.CodeHandoff,
	broker.CodeExecutionFailed, broker.CodeTimeout,
	CodeInvalidRequest,
}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return doc
}

// node walks doc along keys, failing the test when a key is missing or not a mapping.
func node(t *testing.T, doc any, keys ...string) any {
	t.Helper()
	cur := doc
	for i, k := range keys {
		m, ok := asMap(cur)
		if !ok {
			t.Fatalf("%s is not a mapping", strings.Join(keys[:i], "."))
		}
		if cur, ok = m[k]; !ok {
			t.Fatalf("%s is missing", strings.Join(keys[:i+1], "."))
		}
	}
	return cur
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// resolve follows a local $ref ("#/components/...").
func resolve(t *testing.T, doc map[string]any, v any) any {
	t.Helper()
	for range 8 {
		m, ok := asMap(v)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		path, ok := strings.CutPrefix(ref, "#/")
		if !ok {
			t.Fatalf("non-local $ref %q", ref)
		}
		v = node(t, doc, strings.Split(path, "/")...)
	}
	t.Fatal("$ref chain too long")
	return nil
}

func TestOpenAPIVersion(t *testing.T) {
	doc := loadOpenAPI(t)
	v, _ := doc["openapi"].(string)
	if !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", v)
	}
	for _, k := range []string{"info", "paths", "components"} {
		node(t, doc, k)
	}
	scheme, _ := asMap(node(t, doc, "components", "securitySchemes", "clientKey"))
	if scheme["type"] != "http" || scheme["scheme"] != "bearer" {
		t.Fatalf("clientKey scheme = %v, want http bearer", scheme)
	}
}

func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	paths, _ := asMap(node(t, doc, "paths"))

	// The document has exactly the server's routes.
	var documented []string
	for p, item := range paths {
		ops, ok := asMap(item)
		if !ok {
			t.Fatalf("paths.%s is not a mapping", p)
		}
		for m := range ops {
			switch m {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented = append(documented, strings.ToUpper(m)+" "+p)
			}
		}
	}
	want := slices.Concat(apiRoutes, gatewayRoutes)
	sort.Strings(documented)
	sort.Strings(want)
	if !slices.Equal(documented, want) {
		t.Fatalf("documented operations %v, server routes %v", documented, want)
	}
	for _, r := range slices.Concat(apiRoutes, gatewayRoutes) {
		method, path, _ := strings.Cut(r, " ")
		op, _ := asMap(node(t, doc, "paths", path, strings.ToLower(method)))
		sec, hasSec := op["security"]
		if public := publicRoutes[r]; public != (hasSec && fmt.Sprint(sec) == "[]") {
			t.Errorf("%s: security = %v, want public=%v", r, sec, public)
		}
		if !publicRoutes[r] || signedRoutes[r] {
			node(t, op, "responses", "401")
		}
	}

	// Each route is served by the real handler. Without an Authorization header (and over
	// TCP, so with no peer uid) authentication fails before Clients, Broker or Registry is
	// used, so a zero Server is enough.
	srv := httptest.NewServer((&Server{}).Handler())
	defer srv.Close()
	do := func(method, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, r := range apiRoutes {
		method, path, _ := strings.Cut(r, " ")
		res := do(method, path)
		switch {
		case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed:
			t.Errorf("%s: %d, the handler does not serve it", r, res.StatusCode)
		case signedRoutes[r] && res.StatusCode != http.StatusServiceUnavailable:
			t.Errorf("%s without triggers served: %d, want 503", r, res.StatusCode)
		case signedRoutes[r]:
		case publicRoutes[r] && res.StatusCode != http.StatusOK:
			t.Errorf("%s: %d, want 200", r, res.StatusCode)
		case !publicRoutes[r] && res.StatusCode != http.StatusUnauthorized:
			t.Errorf("%s without a key: %d, want 401", r, res.StatusCode)
		case !publicRoutes[r] && res.Header.Get("WWW-Authenticate") != `Bearer realm="capgate"`:
			t.Errorf("%s: WWW-Authenticate = %q", r, res.Header.Get("WWW-Authenticate"))
		}
	}
	// The probe tells a served route from an unserved one.
	if res := do("GET", "/v1/ipc"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/ipc: %d, want 405", res.StatusCode)
	}
	if res := do("POST", "/v1/nothing"); res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/nothing: %d, want 404", res.StatusCode)
	}
}

func TestOpenAPIErrorCodes(t *testing.T) {
	doc := loadOpenAPI(t)
	raw, _ := node(t, doc, "components", "schemas", "ErrorCode", "enum").([]any)
	var got []string
	for _, c := range raw {
		got = append(got, fmt.Sprint(c))
	}
	want := slices.Clone(errorCodes)
	sort.Strings(got)
	sort.Strings(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ErrorCode enum %v, the code base's codes %v", got, want)
	}

	// Every error_code in an example is one of them.
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := asMap(v); ok {
			for k, c := range m {
				if k == "error_code" {
					if s, ok := c.(string); ok && !slices.Contains(want, s) {
						t.Errorf("%s: error_code %q is not a code of the code base", path, s)
					}
				}
				walk(path+"."+k, c)
			}
		} else if l, ok := v.([]any); ok {
			for i, c := range l {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", node(t, doc, "paths"))
	walk("components.responses", node(t, doc, "components", "responses"))
}

// TestOpenAPIEnvelopeSchema checks that the envelope schema says what ParseRequest enforces.
func TestOpenAPIEnvelopeSchema(t *testing.T) {
	doc := loadOpenAPI(t)
	prop := func(schema, field, key string) any {
		return node(t, doc, "components", "schemas", schema, "properties", field, key)
	}
	for _, c := range []struct {
		schema, field, pattern string
	}{
		{"RequestHeader", "request_id", requestIDPattern.String()},
		{"RequestBody", "app", appPattern.String()},
		{"RequestBody", "method", methodPattern.String()},
		{"RequestBody", "capability_token", tokenPattern.String()},
		{"RequestBody", "undo_token", tokenPattern.String()},
	} {
		if got := prop(c.schema, c.field, "pattern"); got != c.pattern {
			t.Errorf("%s.%s pattern = %v, want %s", c.schema, c.field, got, c.pattern)
		}
	}
	for _, f := range []string{"capability_token", "undo_token"} {
		if got := fmt.Sprint(prop("RequestBody", f, "maxLength")); got != fmt.Sprint(fieldLimit(f)) {
			t.Errorf("RequestBody.%s maxLength = %s, want %d", f, got, fieldLimit(f))
		}
	}
	if got := prop("RequestHeader", "msg_type", "const"); got != MsgRequest {
		t.Errorf("msg_type const = %v", got)
	}
	if got := prop("ResponseHeader", "msg_type", "const"); got != MsgResponse {
		t.Errorf("response msg_type const = %v", got)
	}
	if got := prop("RequestHeader", "version", "const"); got != Version {
		t.Errorf("version const = %v", got)
	}
	var actions []string
	for _, a := range prop("RequestBody", "action", "enum").([]any) {
		actions = append(actions, fmt.Sprint(a))
	}
	if want := []string{ActionExecute, ActionQuery, ActionUndo}; !slices.Equal(actions, want) {
		t.Errorf("action enum = %v, want %v", actions, want)
	}
	// The schemas' members are the envelope's.
	members := func(schema string) []string {
		m, _ := asMap(node(t, doc, "components", "schemas", schema, "properties"))
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if got, want := members("RequestHeader"), keys(headerFields); !slices.Equal(got, want) {
		t.Errorf("RequestHeader members %v, want %v", got, want)
	}
	if got, want := members("RequestBody"), keys(bodyFields); !slices.Equal(got, want) {
		t.Errorf("RequestBody members %v, want %v", got, want)
	}
	// Every member of a response body is documented.
	body := map[string]bool{}
	for _, s := range []string{"SuccessBody", "ErrorBody"} {
		for _, k := range members(s) {
			body[k] = true
		}
	}
	full, _ := json.Marshal(ResponseBody{Status: "x", Result: json.RawMessage(`1`), ErrorCode: "x", ErrorMessage: "x",
		Details: map[string]any{"x": 1}, UndoToken: "x", UndoUntil: 1, Compensation: "x", Consent: &ConsentRef{ID: "x", URL: "x"}})
	var fields map[string]any
	if err := json.Unmarshal(full, &fields); err != nil {
		t.Fatal(err)
	}
	for k := range fields {
		if !body[k] {
			t.Errorf("response body member %q is not documented", k)
		}
	}
}

// examples returns the example values of a request body or response content.
func examples(t *testing.T, doc map[string]any, content any) map[string]any {
	t.Helper()
	out := map[string]any{}
	c, _ := asMap(resolve(t, doc, content))
	media, ok := asMap(c["application/json"])
	if !ok {
		return out
	}
	if ex, ok := asMap(media["examples"]); ok {
		for name, e := range ex {
			em, _ := asMap(resolve(t, doc, e))
			if v, ok := em["value"]; ok {
				out[name] = v
			}
		}
	}
	if v, ok := media["example"]; ok {
		out["example"] = v
	}
	return out
}

func TestOpenAPIRequestExamples(t *testing.T) {
	doc := loadOpenAPI(t)
	n := 0
	for _, path := range []string{"/v1/ipc", "/v1/explain"} {
		rb := resolve(t, doc, node(t, doc, "paths", path, "post", "requestBody"))
		exs := examples(t, doc, node(t, rb, "content"))
		if len(exs) == 0 {
			t.Errorf("%s has no request example", path)
		}
		for name, v := range exs {
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s %s: %v", path, name, err)
			}
			if _, err := ParseRequest(data); err != nil {
				t.Errorf("%s example %s does not parse: %v\n%s", path, name, err, data)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no envelope examples")
	}

	// The capability request examples decode as the server decodes them.
	rb := resolve(t, doc, node(t, doc, "paths", "/v1/capabilities/request", "post", "requestBody"))
	exs := examples(t, doc, node(t, rb, "content"))
	if len(exs) == 0 {
		t.Error("/v1/capabilities/request has no request example")
	}
	for name, v := range exs {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jcsCheck(data); err != nil {
			t.Errorf("capability request example %s: %v", name, err)
		}
		var cr capabilityRequest
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cr); err != nil {
			t.Errorf("capability request example %s: %v", name, err)
			continue
		}
		if len(cr.Constraints) > 0 {
			var cons constraintsJSON
			cd := json.NewDecoder(strings.NewReader(string(cr.Constraints)))
			cd.DisallowUnknownFields()
			if err := cd.Decode(&cons); err != nil {
				t.Errorf("capability request example %s constraints: %v", name, err)
			}
		}
		// And pass the rules the broker checks before it issues (token.Validate).
		var cons constraintsJSON
		if len(cr.Constraints) > 0 {
			_ = json.Unmarshal(cr.Constraints, &cons)
		}
		tok := token.Token{ID: token.NewID(), Version: token.Version, Issuer: token.Issuer, IssuedAt: 1706620800,
			ExpiresAt: 1706620800 + cr.Duration, Capabilities: cr.Capabilities, AuditTag: cr.Reason, ClientID: "client_1",
			Constraints: token.Constraints{MaxUses: cr.MaxUses, AllowedPaths: cons.AllowedPaths, AllowedCommands: cons.AllowedCommands,
				DeniedCommands: cons.DeniedCommands, DeniedPatterns: cons.DeniedPatterns, Condition: cons.Condition}}
		if cr.Duration <= 0 {
			t.Errorf("capability request example %s: duration %d would be refused", name, cr.Duration)
		} else if err := token.Validate(tok); err != nil {
			t.Errorf("capability request example %s would be refused: %v", name, err)
		}
	}
}

// TestOpenAPIResponseExamples checks that the envelope examples of responses decode into
// Response with nothing left over, and that their header is an llm_response.
func TestOpenAPIResponseExamples(t *testing.T) {
	doc := loadOpenAPI(t)
	check := func(where string, content any) {
		for name, v := range examples(t, doc, content) {
			m, _ := asMap(v)
			if _, ok := m["header"]; !ok {
				continue // a flat body, not an envelope
			}
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var r Response
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Errorf("%s example %s: %v", where, name, err)
				continue
			}
			if r.Header.MsgType != MsgResponse || r.Header.Version != Version {
				t.Errorf("%s example %s: header %+v", where, name, r.Header)
			}
			if (r.Body.Status == "success") == (r.Body.ErrorCode != "") || (r.Body.Status != "success" && r.Body.Status != "error") {
				t.Errorf("%s example %s: status %q with error_code %q", where, name, r.Body.Status, r.Body.ErrorCode)
			}
		}
	}
	paths, _ := asMap(node(t, doc, "paths"))
	for p, item := range paths {
		ops, _ := asMap(item)
		for m, op := range ops {
			resps, ok := asMap(node(t, op, "responses"))
			if !ok {
				continue
			}
			for status, r := range resps {
				rm, _ := asMap(resolve(t, doc, r))
				if c, ok := rm["content"]; ok {
					check(fmt.Sprintf("%s %s %s", m, p, status), c)
				}
			}
		}
	}
}
