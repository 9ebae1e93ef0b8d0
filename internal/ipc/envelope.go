// Package ipc is capgate's IPC API: the token document's envelope, the wire form agents use
// to call capgate over HTTP (POST /v1/ipc) and over the unix socket (a header and a body,
// llm_request in and llm_response out, with the document's success, error and error-code
// shapes), read strictly, and the HTTP server of every route. The shapes themselves are
// client/wire's, shared with the public Go client.
package ipc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/capgate/capgate/client/wire"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/token"
)

// Limits of one envelope. A call's params are small JSON; anything larger is an attack or a bug.
const (
	// MaxEnvelopeBytes bounds a request envelope read from the wire.
	MaxEnvelopeBytes = 1 << 20
	// MaxDepth bounds the nesting of a request envelope.
	MaxDepth = 32
	// MaxFieldBytes bounds each string of the header and body (a signed token is a few KiB).
	MaxFieldBytes = 16 << 10
)

// fieldLimit is the most bytes a string field of the envelope may hold: a capability token as
// long as the token package allows, any other field MaxFieldBytes.
func fieldLimit(name string) int {
	if name == "capability_token" {
		return token.MaxWireBytes
	}
	return MaxFieldBytes
}

// The header values and actions of the token document (wire's, named here for the server).
const (
	MsgRequest  = wire.MsgRequest
	MsgResponse = wire.MsgResponse
	Version     = wire.Version

	ActionExecute           = wire.ActionExecute
	ActionQuery             = wire.ActionQuery
	ActionRequestCapability = wire.ActionRequestCapability
	ActionUndo              = wire.ActionUndo
)

// The envelope's parts are the wire form's, which the public client shares: one definition
// of what the API carries.
type (
	Header       = wire.Header
	Body         = wire.Body
	Response     = wire.Response
	ResponseBody = wire.ResponseBody
	ConsentRef   = wire.ConsentRef
	Problem      = wire.Problem
)

// Request is an llm_request envelope as ParseRequest read it: its wire form, and its params
// decoded.
type Request struct {
	wire.Request
	// ParamsDecode returns Body.Params decoded (jcs.Value.Interface of what ParseRequest
	// parsed), so that the broker checks them against their schema without parsing them
	// again; it decodes only when called, and the broker calls it only for params it has not
	// seen pass their schema. Nil when the envelope has no params.
	ParamsDecode func() any `json:"-"`
}

// CodeInvalidRequest is the code of an envelope that does not parse or breaks a rule.
const CodeInvalidRequest = wire.CodeInvalidRequest

// RequestError is returned by ParseRequest. RequestID is set when it could be read, so the
// error response can carry it.
type RequestError struct {
	RequestID string
	Problems  []Problem
}

func (e *RequestError) Error() string {
	s := "ipc: invalid request"
	for i, p := range e.Problems {
		if i == 0 {
			s += ": "
		} else {
			s += "; "
		}
		if p.Path != "" {
			s += p.Path + ": "
		}
		s += p.Rule
	}
	return s
}

var (
	envelopeFields = map[string]bool{"header": true, "body": true}
	headerFields   = map[string]bool{"msg_type": true, "version": true, "request_id": true, "timestamp": true}
	bodyFields     = map[string]bool{"action": true, "app": true, "method": true, "params": true, "capability_token": true, "undo_token": true, "dry_run": true}
)

// ParseRequest reads an llm_request envelope strictly: duplicate members, unknown members,
// invalid UTF-8 and lone surrogates are refused, as are values that break the grammar of their
// field. Params are kept as their canonical JSON, so what is checked is what runs.
func ParseRequest(data []byte) (Request, error) {
	if len(data) > MaxEnvelopeBytes {
		return Request{}, &RequestError{Problems: []Problem{{Rule: fmt.Sprintf("larger than %d bytes", MaxEnvelopeBytes)}}}
	}
	root, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxEnvelopeBytes})
	if err != nil {
		p := Problem{Rule: "not valid JSON"}
		if se, ok := err.(*jcs.SyntaxError); ok {
			p = Problem{Path: se.Path, Rule: se.Rule}
		}
		return Request{}, &RequestError{Problems: []Problem{p}}
	}
	var r Request
	var ps []Problem
	bad := func(path, rule string) { ps = append(ps, Problem{Path: path, Rule: rule}) }
	obj := func(v jcs.Value, path string, known map[string]bool) bool {
		if v.Kind != jcs.Object {
			bad(path, "must be an object")
			return false
		}
		for _, m := range v.Members {
			if !known[m.Name] {
				bad(path, "has a member the envelope does not define")
			}
		}
		return true
	}
	str := func(v jcs.Value, name, path string, pattern *grammar, required bool) string {
		m, ok := v.Get(name)
		switch {
		case !ok:
			if required {
				bad(path, "required")
			}
			return ""
		case m.Kind != jcs.String:
			bad(path, "must be a string")
			return ""
		case len(m.Str) > fieldLimit(name):
			bad(path, fmt.Sprintf("longer than %d bytes", fieldLimit(name)))
			return ""
		case pattern != nil && !pattern.MatchString(m.Str):
			bad(path, "does not match "+pattern.String())
			return ""
		}
		return m.Str
	}
	if !obj(root, "", envelopeFields) {
		return Request{}, &RequestError{Problems: ps}
	}
	if h, ok := root.Get("header"); !ok {
		bad("header", "required")
	} else if obj(h, "header", headerFields) {
		r.Header.RequestID = str(h, "request_id", "header.request_id", requestIDPattern, true)
		if str(h, "msg_type", "header.msg_type", nil, true) != MsgRequest {
			bad("header.msg_type", `must be "llm_request"`)
		}
		if str(h, "version", "header.version", nil, true) != Version {
			bad("header.version", `must be "1.0"`)
		}
		if ts, ok := h.Get("timestamp"); ok {
			if ts.Kind != jcs.Number || ts.Float < 0 || ts.Float != float64(int64(ts.Float)) {
				bad("header.timestamp", "must be Unix seconds")
			} else {
				r.Header.Timestamp = int64(ts.Float)
			}
		}
	}
	b, ok := root.Get("body")
	if !ok {
		bad("body", "required")
	} else if obj(b, "body", bodyFields) {
		r.Body.Action = str(b, "action", "body.action", nil, true)
		switch r.Body.Action {
		case ActionExecute, ActionQuery:
			r.Body.App = str(b, "app", "body.app", appPattern, true)
			r.Body.Method = str(b, "method", "body.method", methodPattern, true)
		case ActionUndo:
			r.Body.UndoToken = str(b, "undo_token", "body.undo_token", tokenPattern, true)
		case ActionRequestCapability:
			bad("body.action", "request_capability goes to POST /v1/capabilities/request")
		case "":
			if _, present := b.Get("action"); present {
				bad("body.action", "must not be empty")
			}
		default:
			bad("body.action", "must be execute, query or undo")
		}
		r.Body.CapabilityToken = str(b, "capability_token", "body.capability_token", tokenPattern, false)
		if v, ok := b.Get("dry_run"); ok {
			switch {
			case v.Kind != jcs.Bool:
				bad("body.dry_run", "must be a boolean")
			case r.Body.Action != ActionExecute && v.Bool:
				bad("body.dry_run", "only an execute has a dry run")
			default:
				r.Body.DryRun = v.Bool
			}
		}
		if p, ok := b.Get("params"); ok {
			if p.Kind != jcs.Object {
				bad("body.params", "must be an object")
			} else if c, err := p.AppendCanonical(nil); err == nil {
				r.Body.Params, r.ParamsDecode = c, p.Interface
			}
		} else {
			r.Body.Params = json.RawMessage("{}")
		}
	}
	if len(ps) > 0 {
		return Request{}, &RequestError{RequestID: r.Header.RequestID, Problems: ps}
	}
	return r, nil
}

// Success returns the response to req with result.
func Success(requestID string, now time.Time, result json.RawMessage) Response {
	return Response{Header: responseHeader(requestID, now), Body: ResponseBody{Status: "success", Result: result}}
}

// Error returns an error response. The message is plain words for the agent; it must not hold
// a token, a key or a param value.
func Error(requestID string, now time.Time, code, message string, details map[string]any) Response {
	return Response{Header: responseHeader(requestID, now), Body: ResponseBody{Status: "error", ErrorCode: code, ErrorMessage: message, Details: details}}
}

func responseHeader(requestID string, now time.Time) Header {
	return Header{MsgType: MsgResponse, Version: Version, RequestID: requestID, Timestamp: now.Unix()}
}

// jcsCheck parses data strictly (duplicate members, invalid UTF-8, lone surrogates refused).
func jcsCheck(data []byte) (jcs.Value, error) {
	return jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxEnvelopeBytes})
}
