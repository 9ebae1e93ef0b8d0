package ipc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
)

const valid = `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"req_abc123","timestamp":1706620800},
"body":{"action":"execute","app":"terminal","method":"execute_command","params":{"command":"ps","timeout":60000},"capability_token":"cgt1.abc"}}`

func TestParseRequest(t *testing.T) {
	r, err := ParseRequest([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.RequestID != "req_abc123" || r.Body.App != "terminal" || r.Body.Method != "execute_command" ||
		string(r.Body.Params) != `{"command":"ps","timeout":60000}` || r.Body.CapabilityToken != "cgt1.abc" {
		t.Fatalf("parsed: %+v", r)
	}
	if r.Body.DryRun {
		t.Error("a request without dry_run is a dry run")
	}
	r, err = ParseRequest([]byte(strings.Replace(valid, `"action":"execute",`, `"action":"execute","dry_run":true,`, 1)))
	if err != nil || !r.Body.DryRun {
		t.Fatalf("dry_run true: %+v %v", r.Body, err)
	}
	r, err = ParseRequest([]byte(`{"header":{"msg_type":"llm_request","version":"1.0","request_id":"r1"},"body":{"action":"query","app":"settings","method":"get_setting"}}`))
	if err != nil || string(r.Body.Params) != "{}" {
		t.Fatalf("no params: %+v %v", r, err)
	}
}

func TestParseRequestRefuses(t *testing.T) {
	const marker = "EVIL\u202e"
	cases := map[string]struct{ in, path string }{
		"not JSON":            {`{"header":`, "header"},
		"duplicate member":    {strings.Replace(valid, `"app":"terminal",`, `"app":"terminal","app":"files",`, 1), "body"},
		"duplicate in params": {strings.Replace(valid, `"command":"ps",`, `"command":"ps","command":"rm",`, 1), "body.params"},
		"unknown member":      {strings.Replace(valid, `"action":"execute",`, `"action":"execute","sudo":true,`, 1), "body"},
		"wrong msg_type":      {strings.Replace(valid, `llm_request`, `llm_response`, 1), "header.msg_type"},
		"wrong version":       {strings.Replace(valid, `"version":"1.0"`, `"version":"2.0"`, 1), "header.version"},
		"bad request id":      {strings.Replace(valid, `req_abc123`, marker, 1), "header.request_id"},
		"app with slash":      {strings.Replace(valid, `"app":"terminal"`, `"app":"../`+marker+`"`, 1), "body.app"},
		"method upper":        {strings.Replace(valid, `"method":"execute_command"`, `"method":"Exec`+marker+`"`, 1), "body.method"},
		"params not object":   {strings.Replace(valid, `{"command":"ps","timeout":60000}`, `["ps"]`, 1), "body.params"},
		"unknown action":      {strings.Replace(valid, `"action":"execute"`, `"action":"`+marker+`"`, 1), "body.action"},
		"missing header":      {`{"body":{"action":"execute","app":"a","method":"m"}}`, "header"},
		"lone surrogate":      {strings.Replace(valid, `"ps"`, `"\ud800"`, 1), "body.params.command"},
		"token with spaces":   {strings.Replace(valid, `"cgt1.abc"`, `"cgt1 `+marker+`"`, 1), "body.capability_token"},
		"dry_run not boolean": {strings.Replace(valid, `"action":"execute",`, `"action":"execute","dry_run":"true",`, 1), "body.dry_run"},
		"dry_run as number":   {strings.Replace(valid, `"action":"execute",`, `"action":"execute","dry_run":1,`, 1), "body.dry_run"},
		"dry_run of a query":  {strings.Replace(valid, `"action":"execute",`, `"action":"query","dry_run":true,`, 1), "body.dry_run"},
		"dry_run twice":       {strings.Replace(valid, `"action":"execute",`, `"action":"execute","dry_run":false,"dry_run":true,`, 1), "body"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRequest([]byte(tc.in))
			var re *RequestError
			if !errors.As(err, &re) || len(re.Problems) == 0 {
				t.Fatalf("ParseRequest = %v, want a RequestError", err)
			}
			found := false
			for _, p := range re.Problems {
				found = found || p.Path == tc.path
			}
			if !found {
				t.Errorf("no problem at %q: %v", tc.path, re.Problems)
			}
			if strings.Contains(err.Error(), "EVIL") {
				t.Errorf("error echoes the value: %v", err)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	now := time.Unix(1706620801, 0)
	b, _ := json.Marshal(Success("req_abc123", now, json.RawMessage(`{"output":"ok"}`)))
	if want := `{"header":{"msg_type":"llm_response","version":"1.0","request_id":"req_abc123","timestamp":1706620801},"body":{"status":"success","result":{"output":"ok"}}}`; string(b) != want {
		t.Errorf("success = %s", b)
	}
	b, _ = json.Marshal(Error("req_abc123", now, "CAPABILITY_DENIED", "Capability fs.write not granted in token",
		map[string]any{"required_capability": "fs.write", "token_capabilities": []string{"fs.read"}}))
	if want := `{"header":{"msg_type":"llm_response","version":"1.0","request_id":"req_abc123","timestamp":1706620801},"body":{"status":"error","error_code":"CAPABILITY_DENIED","error_message":"Capability fs.write not granted in token","details":{"required_capability":"fs.write","token_capabilities":["fs.read"]}}}`; string(b) != want {
		t.Errorf("error = %s", b)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(`{"header":{},"body":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data)
		if err == nil && !json.Valid(r.Body.Params) {
			t.Fatalf("accepted params that are not JSON")
		}
	})
}

func TestEmptyActionRefused(t *testing.T) {
	_, err := ParseRequest([]byte(strings.Replace(valid, `"action":"execute"`, `"action":""`, 1)))
	var re *RequestError
	if !errors.As(err, &re) || re.Problems[0].Path != "body.action" {
		t.Fatalf("empty action: %v", err)
	}
}

// A capability token may be as long as the token package allows; every other field is held to
// MaxFieldBytes.
func TestTokenFieldLimit(t *testing.T) {
	env := func(tok string) []byte {
		return []byte(`{"header":{"version":"1.0","msg_type":"llm_request","request_id":"r1","timestamp":1},` +
			`"body":{"action":"execute","app":"notes","method":"search","capability_token":"` + tok + `"}}`)
	}
	long := "cgt1." + strings.Repeat("A", MaxFieldBytes+100)
	if _, err := ParseRequest(env(long)); err != nil {
		t.Fatalf("a token longer than MaxFieldBytes: %v", err)
	}
	tooLong := "cgt1." + strings.Repeat("A", token.MaxWireBytes)
	if _, err := ParseRequest(env(tooLong)); err == nil || !strings.Contains(err.Error(), "body.capability_token") {
		t.Fatalf("a token longer than token.MaxWireBytes: %v", err)
	}
}
