package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzAnswer feeds the answer readers whatever a server might send: they never panic, every
// failure is an *Error with a code of the API's form or a *ProtocolError, and no error's
// text holds a secret of the request.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"header":{"msg_type":"llm_response","version":"1.0","request_id":"r1"},"body":{"status":"success","result":{"a":1},"undo_token":"undo_1","undo_until":1}}`,
		`{"header":{"msg_type":"llm_response","version":"1.0","request_id":"r1"},"body":{"status":"error","error_code":"CONSENT_REQUIRED","error_message":"wait","details":{"decision":"ask","call_id":"call_1","problems":[{"path":"body.app","rule":"x"}]},"consent":{"id":"req_1","url":"/ui/requests/req_1"}}}`,
		`{"status":"error","error_code":"CONSENT_DENIED","error_message":"no","consent":{"id":"req_1"}}`,
		`{"status":"success","token":"cgt1.x","token_id":"cap_1","expires_at":1,"consent_id":""}`,
		`{"outcome":"deny","code":"CAPABILITY_DENIED","explanation":"x","step":5,"trace":["a"]}`,
		`{"capabilities":[{"id":"a.b.c"}]}`,
		`{"header":1}`, `[]`, `null`, ``, `{"details":{"problems":7}}`,
	} {
		f.Add(s, 200)
		f.Add(s, 401)
		f.Add(s, 403)
	}
	const key, tok = "cgk_fuzzsecretfuzzsecret", "cgt1.fuzzsecrettoken"
	f.Fuzz(func(t *testing.T, body string, status int) {
		body = strings.ReplaceAll(body, "KEY", key)
		a := answer{endpoint: "POST /v1/ipc", status: status, body: []byte(body), secrets: []string{tok, key}}
		check := func(err error) {
			if err == nil {
				return
			}
			var e *Error
			var pe *ProtocolError
			switch {
			case errors.As(err, &e):
				if !validCode(e.Code) || e.HTTPStatus != status {
					t.Fatalf("an *Error of code %q, status %d", e.Code, e.HTTPStatus)
				}
			case errors.As(err, &pe):
			default:
				t.Fatalf("an error of type %T: %v", err, err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), tok) {
				t.Fatalf("the error holds a secret: %v", err)
			}
		}
		if env, err := a.envelope(); err == nil && env.Body.Status == "error" {
			check(a.envelopeError(env))
		} else {
			check(err)
		}
		if status != http.StatusOK {
			check(a.failure())
		}
		var x Explanation
		check(a.decodeJSON(&x))
	})
}
