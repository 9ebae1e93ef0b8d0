// Package wire is the wire form of capgate's IPC API, one definition shared by the gateway
// that serves it (internal/ipc) and the Go client that calls it (package client): the token
// document's envelope (a header and a body, llm_request in and llm_response out), the bodies
// of the token and capability endpoints, and the error codes.
//
// It holds shapes and names only. A value of these types is not checked by being one: the
// gateway reads every request strictly (no unknown or duplicate members, each field's grammar
// and size, see docs/openapi.yaml), and refuses what these types would let through.
//
// Evolution: a member is added, never renamed or removed; a new member is optional, so that
// a client and a gateway of different releases still understand each other.
package wire

import "encoding/json"

// The header values of the token document.
const (
	MsgRequest  = "llm_request"
	MsgResponse = "llm_response"
	Version     = "1.0"
)

// The actions of a request body. ActionRequestCapability is the token document's name for
// what capgate serves at POST /v1/capabilities/request; POST /v1/ipc refuses it.
const (
	ActionExecute           = "execute"
	ActionQuery             = "query"
	ActionRequestCapability = "request_capability"
	ActionUndo              = "undo"
)

// The statuses of a response body.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Header is the envelope's header.
type Header struct {
	MsgType   string `json:"msg_type"`
	Version   string `json:"version"`
	RequestID string `json:"request_id"`
	Timestamp int64  `json:"timestamp"` // Unix seconds
}

// Body is a request's body: a call of App's Method (ActionExecute, ActionQuery) or an undo
// (ActionUndo, UndoToken).
type Body struct {
	Action          string          `json:"action"`
	App             string          `json:"app,omitempty"`
	Method          string          `json:"method,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"` // a JSON object; absent is {}
	CapabilityToken string          `json:"capability_token,omitempty"`
	UndoToken       string          `json:"undo_token,omitempty"` // for undo
	// DryRun asks an execute to show what it would do and change nothing; only a capability
	// that declares dry_run accepts it.
	DryRun bool `json:"dry_run,omitempty"`
}

// Request is an llm_request envelope.
type Request struct {
	Header Header `json:"header"`
	Body   Body   `json:"body"`
}

// Response is an llm_response envelope.
type Response struct {
	Header Header       `json:"header"`
	Body   ResponseBody `json:"body"`
}

// ResponseBody is a success ({"status": "success", "result": ...}) or an error
// ({"status": "error", "error_code", "error_message", "details"}). capgate adds the undo token
// of a reversible call, the remedy of a compensable one, and the consent request a call waits on.
type ResponseBody struct {
	Status       string          `json:"status"` // StatusSuccess or StatusError
	Result       json.RawMessage `json:"result,omitempty"`
	ErrorCode    string          `json:"error_code,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Details      map[string]any  `json:"details,omitempty"`
	UndoToken    string          `json:"undo_token,omitempty"`
	UndoUntil    int64           `json:"undo_until,omitempty"` // Unix milliseconds
	Compensation string          `json:"compensation,omitempty"`
	Consent      *ConsentRef     `json:"consent,omitempty"`
}

// ConsentRef points the person to the request waiting for their answer.
type ConsentRef struct {
	ID  string `json:"id"`
	URL string `json:"url,omitempty"` // the request's page, relative to the gateway
}

// Problem is why an envelope was refused: where and which rule, never the value.
type Problem struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// Explanation is the answer of POST /v1/explain: what a call would get and why.
type Explanation struct {
	Outcome     string   `json:"outcome"`     // allow, deny, ask or handoff
	Code        string   `json:"code"`        // the error code the call would get; "" when allowed
	Explanation string   `json:"explanation"` // in words
	Step        int      `json:"step"`        // the step of "Deciding a call" that decided
	Trace       []string `json:"trace"`       // each step's finding, in order
}
