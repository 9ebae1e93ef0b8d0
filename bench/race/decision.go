package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cedar-policy/cedar-go"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/capgate/capgate/internal/broker"
)

// The one rule every engine decides: the race's client may read the Settings app's values.
// In capgate it is the token the client holds (system.settings.read, bound to the client) and
// the Settings app's get_setting, which requires that permission; in cedar-go and OPA it is
// the same rule written in their languages, over a principal, an action and a resource.
const (
	cedarPolicy = `permit (
	principal == Client::"%s",
	action == Action::"system.settings.read",
	resource == App::"settings"
);`
	regoModule = `package capgate

default allow := false

allow if {
	input.principal == %q
	input.action == "system.settings.read"
	input.resource == "settings"
}`
)

// capgateDecision is capgate's decision of get_setting under the cached token: the
// capability resolved, the token from the verifier's cache and its state from the broker's
// cache, the params against their schema (remembered: the same params each call), the
// constraints, the mandates and policy.Decide; nothing recorded or run
// (broker.Broker.Decide). The same call by another client under the token is checked once
// to be denied; only the allowed call is raced, as in the other engines.
func capgateDecision(r *rig) (allow func() error, err error) {
	req, err := r.settingsRequest()
	if err != nil {
		return nil, err
	}
	b, caller, ctx := r.g.Broker, r.caller, r.ctx
	allow = func() error {
		if d := b.Decide(ctx, caller, req); !d.Allowed() {
			return fmt.Errorf("capgate denied the allowed call: %s %s", d.Code, d.Explanation)
		}
		return nil
	}
	// The same call by another client under the token must be denied: the token is bound
	// to the client it was issued to.
	other := broker.Caller{ClientID: "cl_other", Name: "other", Trust: caller.Trust}
	if d := b.Decide(ctx, other, req); d.Allowed() {
		return nil, errors.New("capgate allowed another client's call under the token")
	}
	return allow, nil
}

// cedarDecision is cedar-go's decision of the one rule, its policy parsed once and its
// request built once, as a service holding both would call it; no entities. cedar.Authorize
// is the call PolicySet.IsAuthorized makes (IsAuthorized is deprecated in v1.9 for it).
func cedarDecision(clientID string) (func() error, error) {
	var p cedar.Policy
	if err := p.UnmarshalCedar(fmt.Appendf(nil, cedarPolicy, clientID)); err != nil {
		return nil, fmt.Errorf("cedar: %w", err)
	}
	ps := cedar.NewPolicySet()
	ps.Add("settings-read", &p)
	req := func(principal string) cedar.Request {
		return cedar.Request{
			Principal: cedar.NewEntityUID("Client", cedar.String(principal)),
			Action:    cedar.NewEntityUID("Action", "system.settings.read"),
			Resource:  cedar.NewEntityUID("App", "settings"),
			Context:   cedar.NewRecord(cedar.RecordMap{}),
		}
	}
	allowed, other := req(clientID), req("cl_other")
	if d, _ := cedar.Authorize(ps, nil, other); d == cedar.Allow {
		return nil, errors.New("cedar allowed another client")
	}
	return func() error {
		if d, diag := cedar.Authorize(ps, nil, allowed); d != cedar.Allow {
			return fmt.Errorf("cedar denied the allowed request: %v", diag.Errors)
		}
		return nil
	}, nil
}

// opaDecision is OPA's prepared query of the one rule (rego.PrepareForEval once, Eval per
// decision), its input parsed into OPA's value once (rego.EvalParsedInput), OPA's fastest
// way to be asked.
func opaDecision(ctx context.Context, clientID string) (func() error, error) {
	pq, err := rego.New(rego.Query("data.capgate.allow"), rego.Module("capgate.rego", fmt.Sprintf(regoModule, clientID))).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("opa: %w", err)
	}
	input := func(principal string) (ast.Value, error) {
		return ast.InterfaceToValue(map[string]any{"principal": principal, "action": "system.settings.read", "resource": "settings"})
	}
	allowed, err := input(clientID)
	if err != nil {
		return nil, fmt.Errorf("opa: %w", err)
	}
	other, err := input("cl_other")
	if err != nil {
		return nil, fmt.Errorf("opa: %w", err)
	}
	decide := func(in ast.Value) (bool, error) {
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(in))
		if err != nil {
			return false, err
		}
		return rs.Allowed(), nil
	}
	if ok, err := decide(other); err != nil || ok {
		return nil, fmt.Errorf("opa allowed another client (or failed: %v)", err)
	}
	return func() error {
		ok, err := decide(allowed)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("opa denied the allowed request")
		}
		return nil
	}, nil
}
