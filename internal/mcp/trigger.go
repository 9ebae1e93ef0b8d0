package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/trigger"
)

// ToolProposeTrigger proposes a trigger (trigger.Spec) as the calling client.
const ToolProposeTrigger = "capgate__propose_trigger"

var proposeTriggerSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["source","action","budget","ends_at"],
"properties":{
"source":{"type":"object","additionalProperties":false,"required":["kind"],"description":"When it fires.","properties":{
 "kind":{"enum":["schedule","webhook","event","reply"],"description":"schedule: cron in a time zone; webhook: a signed request to its own URL; event: an app's event declared in its manifest; reply: a typed reply of another client."},
 "cron":{"type":"string","maxLength":256,"description":"schedule: five fields (minute hour day-of-month month day-of-week) or @daily, @hourly, @weekly, @monthly, @yearly."},
 "time_zone":{"type":"string","maxLength":64,"description":"schedule: an IANA zone such as Europe/Istanbul; required."},
 "app":{"type":"string","maxLength":253,"description":"event: the app's id."},
 "event":{"type":"string","maxLength":128,"description":"event: the event type the app declares."},
 "from":{"type":"string","maxLength":256,"description":"reply: the other client (id or name) whose replies it waits for."},
 "schema":{"type":"object","description":"reply: the JSON Schema its reply must pass."}}},
"condition":{"type":"string","maxLength":4096,"description":"A CEL expression over event (the payload, untrusted), permission and now; it fires only when true."},
"action":{"type":"object","additionalProperties":false,"required":["app","method"],"description":"The one action it takes, with its params fixed now: no event can change them.","properties":{
 "app":{"type":"string","maxLength":253},"method":{"type":"string","maxLength":256},"params":{"type":"object"}}},
"budget":{"type":"object","additionalProperties":false,"required":["count"],"properties":{
 "count":{"type":"integer","minimum":1,"description":"The most firings; it stops for good after."},
 "amount":{"type":"object","additionalProperties":false,"required":["field","max"],"description":"A sum budget over the action's amount param.","properties":{
  "field":{"type":"string"},"max":{"type":"number","exclusiveMinimum":0}}}}},
"ends_at":{"type":"string","format":"date-time","description":"RFC 3339; required: there are no open-ended triggers (at most 90 days from now unless the host says otherwise)."},
"missed":{"enum":["skip","once"],"description":"What becomes of scheduled times missed while capgate was down (default skip)."},
"reason":{"type":"string","maxLength":1024,"description":"Why, shown to the person."}}}`)

func (s *session) addTriggerTool() {
	s.srv.AddTool(&mcpsdk.Tool{
		Name: ToolProposeTrigger, Title: "Propose a trigger",
		Description: "[capgate] Proposes a trigger: when something happens (a time, a signed webhook request, an app's event) and a condition holds, take one action with fixed params, within a budget and before an end date. " +
			"The person approves it on capgate's approval page first; every firing is then decided afresh under their mandate. The result is the trigger, proposed, with its consent request's id (and a webhook's secret, shown this once).",
		InputSchema: proposeTriggerSchema,
		Annotations: &mcpsdk.ToolAnnotations{Title: "Propose a trigger", DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
	}, s.proposeTrigger)
}

func (s *session) proposeTrigger(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	caller, err := callerOf(req)
	if err != nil || caller.ClientID != s.client {
		return refusal(codePermission, "this session belongs to another client", nil), nil
	}
	if s.h.o.Triggers == nil {
		return refusal(codeFailed, "triggers are not served here", nil), nil
	}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	spec, err := trigger.ParseSpec(args)
	if err != nil {
		return refusal(codeInvalidRequest, err.Error(), nil), nil
	}
	p, err := s.h.o.Triggers.Propose(ctx, caller, spec)
	switch {
	case err == nil:
	case errors.Is(err, trigger.ErrInvalid), errors.Is(err, trigger.ErrTooMany):
		return refusal(codeInvalidRequest, err.Error(), nil), nil
	case errors.Is(err, trigger.ErrRefused):
		return refusal("CAPABILITY_DENIED", strings.TrimPrefix(err.Error(), trigger.ErrRefused.Error()+": "), nil), nil
	default:
		s.h.o.Logger.Error("mcp: proposing a trigger", "err", err)
		return refusal(codeFailed, "the trigger could not be proposed", nil), nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return refusal(codeFailed, "the trigger could not be encoded", nil), nil
	}
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	body["message"] = "proposed: it fires only once the person approves it on capgate's approval page (consent_id)"
	return success(body, nil), nil
}
