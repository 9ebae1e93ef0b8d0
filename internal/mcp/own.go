package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/token"
)

var requestCapabilitySchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["capabilities"],
"properties":{
"capabilities":{"type":"array","minItems":1,"maxItems":64,"items":{"type":"string","maxLength":256},"description":"Permissions to be granted (such as app.calc.compute, or fs.* for a family), or names of tools of this list, which stand for their permissions."},
"duration":{"type":"integer","minimum":1,"maximum":31536000,"description":"Seconds the token lasts (default 900)."},
"max_uses":{"type":"integer","minimum":0,"description":"The most calls the token allows; 0 or absent: no limit."},
"reason":{"type":"string","maxLength":1000,"description":"Why the agent asks, shown to the person and kept in the audit log."},
"constraints":{"type":"object","additionalProperties":false,"description":"Limits on what calls under the token may do.","properties":{
"allowed_paths":{"type":"array","items":{"type":"string"},"description":"Absolute patterns (/srv/ws/**) every path the calls carry must match, commands' words and cwd included."},
"allowed_commands":{"type":"array","items":{"type":"string"},"description":"The only programs commands may run. Under any command or path constraint, shells and interpreters are refused."},
"denied_commands":{"type":"array","items":{"type":"string"},"description":"Programs and flags commands never run: a convenience, weaker than allowed_commands."},
"denied_patterns":{"type":"array","items":{"type":"string"}},
"condition":{"type":"string","description":"A CEL expression over params, permission and now."}}}}}`)

var undoSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["undo_token"],
"properties":{"undo_token":{"type":"string","maxLength":256,"description":"The undo_token of a call's result."}}}`)

var explainSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["app","method"],
"properties":{"app":{"type":"string","maxLength":253,"description":"The app's alias or id (the part of a tool name before __)."},
"method":{"type":"string","maxLength":128,"description":"The capability's method (the part of a tool name after __)."},
"params":{"type":"object","description":"The arguments the call would have."}}}`)

var negotiateSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["supports"],
"properties":{"supports":{"type":"array","maxItems":1024,"items":{"type":"string","maxLength":320},"description":"The definitions this client supports, each name@major.minor (org.capgate.transport.ride.request@1.2)."}}}`)

var findCapabilitiesSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["task"],
"properties":{"task":{"type":"string","minLength":1,"maxLength":4096,"description":"What the agent wants to do, in English or Turkish."},
"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many candidates at most (default 5)."}}}`)

func boolp(b bool) *bool { return &b }

func (s *session) addOwnTools() {
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolRequestCapability, Title: "Request a capability token",
		Description: "[capgate] Asks capgate for a token granting permissions to this client, for a time and a number of uses. " +
			"Medium- and high-risk permissions wait for the person's approval on capgate's approval page; the result then says CONSENT_REQUIRED with the request's id. " +
			"capgate keeps the token for this client (the result names it by token_handle, which grants nothing alone): later tool calls use it on their own, or name it in _meta." + HandleMeta + ".",
		InputSchema: requestCapabilitySchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Request a capability token", DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.requestCapability)
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolUndo, Title: "Undo a call",
		Description: "[capgate] Undoes an earlier call of this client within its undo window, given the undo_token its result carried.",
		InputSchema: undoSchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Undo a call", DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.undo)
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolExplain, Title: "Explain a decision",
		Description: "[capgate] Says what a call would get and why (allow, ask, handoff or deny, with the step and code), with the tokens capgate holds for this client, without running it, asking anyone or using a token.",
		InputSchema: explainSchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Explain a decision", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.explain)
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolNegotiate, Title: "Negotiate definitions",
		Description: "[capgate] Intersects the capability definitions this client supports (name@major.minor) with capgate's: each name both know at the highest version both support, an extension only with its parent. Answers the offered definitions and why each entry was kept or dropped.",
		InputSchema: negotiateSchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Negotiate definitions", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.negotiate)
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolFindCapabilities, Title: "Find capabilities for a task",
		Description: "[capgate] Given a task in plain words (English or Turkish), answers the few tools of this list that best fit it, best first, among only those this client may use: a way to find the right tool without reading all of them. A tools/list whose _meta names the task (\"" + TaskMeta + "\", and \"" + LimitMeta + "\") lists only these and capgate's own tools.",
		InputSchema: findCapabilitiesSchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Find capabilities for a task", ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.findCapabilities)
	s.addTriggerTool()
}

func (s *session) findCapabilities(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	caller, err := callerOf(req)
	if err != nil || caller.ClientID != s.client {
		return refusal(codePermission, "this session belongs to another client", nil), nil
	}
	var a struct {
		Task  string `json:"task"`
		Limit int    `json:"limit"`
	}
	if !strictly(req.Params.Arguments, &a) || a.Limit < 0 || a.Limit > plan.MaxCandidates {
		return refusal(codeInvalidRequest, "the arguments must be {task, limit}, limit 1 to 50", nil), nil
	}
	if s.h.o.Planner == nil {
		return refusal(codeFailed, "planning is not served here", nil), nil
	}
	plannable, err := s.h.o.Broker.Plannable(ctx, caller)
	if err != nil {
		return refusal(codeFailed, "planning failed: the person's mandates could not be read", nil), nil
	}
	cands, err := s.h.o.Planner.Candidates(a.Task, plannable, a.Limit)
	if errors.Is(err, plan.ErrTask) {
		return refusal(codeInvalidRequest, "task: must be 1 to 4096 bytes of text", nil), nil
	}
	if err != nil {
		return refusal(codeFailed, "planning failed", nil), nil
	}
	out := make([]map[string]any, 0, len(cands))
	for _, c := range cands {
		out = append(out, map[string]any{"tool": ToolName(c.App.Alias, c.Method, c.ID.String()), "capability": c.ID.String(),
			"name": c.Cap.Name, "permission": c.Permission.String(), "score": c.Score})
	}
	return success(map[string]any{"candidates": out}, nil), nil
}

func (s *session) negotiate(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	var a struct {
		Supports []string `json:"supports"`
	}
	if !strictly(req.Params.Arguments, &a) || a.Supports == nil || len(a.Supports) > definition.MaxSupports {
		return refusal(codeInvalidRequest, "the arguments must be {supports: [name@major.minor, ...]}, at most 1024", nil), nil
	}
	ans := definition.Negotiate(s.h.o.Definitions, a.Supports).Answer()
	return success(map[string]any{"offered": ans.Offered, "choices": ans.Choices}, nil), nil
}

// strictly decodes a tool's arguments into v, refusing unknown members.
func strictly(raw json.RawMessage, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil && !dec.More()
}

type constraintsArg struct {
	AllowedPaths    []string `json:"allowed_paths"`
	AllowedCommands []string `json:"allowed_commands"`
	DeniedCommands  []string `json:"denied_commands"`
	DeniedPatterns  []string `json:"denied_patterns"`
	Condition       string   `json:"condition"`
}

func (s *session) requestCapability(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	caller, err := callerOf(req)
	if err != nil || caller.ClientID != s.client {
		return refusal(codePermission, "this session belongs to another client", nil), nil
	}
	var a struct {
		Capabilities []string        `json:"capabilities"`
		Duration     int64           `json:"duration"`
		MaxUses      int64           `json:"max_uses"`
		Reason       string          `json:"reason"`
		Constraints  *constraintsArg `json:"constraints"`
	}
	if !strictly(req.Params.Arguments, &a) || len(a.Capabilities) == 0 || a.Duration < 0 || a.MaxUses < 0 {
		return refusal(codeInvalidRequest, "the arguments must be {capabilities, duration, max_uses, reason, constraints} as the tool's schema says", nil), nil
	}
	if a.Duration == 0 {
		a.Duration = DefaultTokenSeconds
	}
	perms := make([]string, len(a.Capabilities))
	for i, c := range a.Capabilities {
		perms[i] = s.permissionOf(c)
	}
	var cons token.Constraints
	if c := a.Constraints; c != nil {
		cons = token.Constraints{AllowedPaths: c.AllowedPaths, AllowedCommands: c.AllowedCommands,
			DeniedCommands: c.DeniedCommands, DeniedPatterns: c.DeniedPatterns, Condition: c.Condition}
	}
	in := inputsOf(req)
	if in.bad {
		return refusal(codeInvalidRequest, "requestState is not one capgate gave", nil), nil
	}
	el := s.elicitor(req)
	// Withdrawn when the client goes away while it waits for the person.
	wctx, cancel := untilClientGone(ctx, req)
	defer cancel()
	creq := broker.CapabilityRequest{
		Capabilities: perms, Duration: a.Duration, MaxUses: a.MaxUses, Reason: a.Reason, Constraints: cons, OnConsent: el.start,
	}
	if in.on {
		creq.AskOnly, creq.Consent = !in.waits(), in.consent
	}
	iss, err := s.h.o.Broker.RequestCapability(wctx, caller, creq)
	el.finish(ctx, !errors.Is(err, broker.ErrIssuePending) && iss.ConsentID != "")
	if in.on && in.consent == "" && errors.Is(err, broker.ErrIssuePending) && iss.ConsentID != "" {
		return s.inputRequired(iss.ConsentID), nil
	}
	if r := in.reported(iss.ConsentID); r != nil {
		el = r
	}
	switch {
	case err == nil:
		handle, err := s.h.hold(ctx, caller.ClientID, iss, perms, a.MaxUses, cons.OnParams())
		if err != nil {
			s.h.o.Logger.Error("mcp: keeping an issued token", "err", err)
			return refusal(codeFailed, "the token was issued but could not be kept for this client; ask again", nil), nil
		}
		body := map[string]any{"status": "issued", "token_id": iss.ID, "token_handle": handle, "capabilities": perms, "expires_at": iss.ExpiresAt.UTC().Format(time.RFC3339),
			"note": "capgate holds the token for this client: calls use the narrowest held token that covers them, or the one whose token_handle they name in _meta." + HandleMeta + "; the handle alone grants nothing"}
		if a.MaxUses > 0 {
			body["max_uses"] = a.MaxUses
		}
		if iss.ConsentID != "" {
			body["consent_id"] = iss.ConsentID
		}
		return success(body, nil), nil
	case errors.Is(err, broker.ErrIssueInvalid):
		return refusal(codeInvalidRequest, err.Error(), nil), nil
	case errors.Is(err, broker.ErrIssuePending):
		return refusal(codeConsent, "the request waits for the person's consent on capgate's approval page; ask again once they approved",
			map[string]any{"consent": s.consentRef(iss.ConsentID, el.used())}), nil
	case errors.Is(err, broker.ErrIssueNeverAsk):
		return refusal(codeConsent, "the grants need the person's consent and this client is set never to ask", nil), nil
	case errors.Is(err, broker.ErrIssueExpired):
		return refusal("CONSENT_DENIED", "no answer came before the request expired", map[string]any{"consent": s.consentRef(iss.ConsentID, el.used())}), nil
	case errors.Is(err, broker.ErrIssueDenied):
		return refusal("CONSENT_DENIED", "the person did not approve the request", map[string]any{"consent": s.consentRef(iss.ConsentID, el.used())}), nil
	case errors.Is(err, broker.ErrIssueWithdrawn):
		return refusal("CONSENT_DENIED", err.Error(), nil), nil
	default:
		s.h.o.Logger.Error("mcp request_capability failed", "err", err)
		return refusal(codeFailed, "the token could not be issued", nil), nil
	}
}

func (s *session) undo(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	caller, err := callerOf(req)
	if err != nil || caller.ClientID != s.client {
		return refusal(codePermission, "this session belongs to another client", nil), nil
	}
	var a struct {
		UndoToken string `json:"undo_token"`
	}
	if !strictly(req.Params.Arguments, &a) || a.UndoToken == "" {
		return refusal(codeInvalidRequest, "the arguments must be {undo_token}", nil), nil
	}
	err = s.h.o.Broker.Undo(ctx, caller, a.UndoToken)
	switch {
	case err == nil:
		return success(map[string]any{"undone": true}, nil), nil
	case errors.Is(err, broker.ErrUndoUnknown), errors.Is(err, broker.ErrUndoClient):
		return refusal("INVALID_TOKEN", "no such undo token for this client", nil), nil
	case errors.Is(err, broker.ErrUndoExpired):
		return refusal("TOKEN_EXPIRED", "the undo window has passed", nil), nil
	case errors.Is(err, broker.ErrUndoNotSupp):
		return refusal(codeMethodNotFound, "the app cannot undo", nil), nil
	}
	return refusal(codeFailed, "the undo failed", nil), nil
}

func (s *session) explain(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	caller, err := callerOf(req)
	if err != nil || caller.ClientID != s.client {
		return refusal(codePermission, "this session belongs to another client", nil), nil
	}
	var a struct {
		App    string          `json:"app"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if !strictly(req.Params.Arguments, &a) || a.App == "" || a.Method == "" {
		return refusal(codeInvalidRequest, "the arguments must be {app, method, params}", nil), nil
	}
	p, pv, ok := params(a.Params)
	if !ok {
		return refusal(codeInvalidRequest, "params must be a JSON object", nil), nil
	}
	breq := broker.Request{RequestID: "mcp-explain", Action: "execute", App: a.App, Method: a.Method, Params: p, ParamsValue: pv}
	if cap, ok := s.h.o.Registry.Method(a.App, a.Method); ok {
		breq.Token, _ = s.pickToken(ctx, caller, breq, cap.Permission)
	}
	d := s.h.o.Broker.Explain(ctx, caller, breq)
	return success(map[string]any{"outcome": d.Outcome, "code": d.Code, "explanation": d.Explanation, "step": d.Step, "trace": d.Trace}, nil), nil
}
