package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
)

// SelfTest is the evaluation gate of the A2A endpoint: every new endpoint passes it before
// it opens. It runs h in-process, through h.ServeHTTP, and checks what an A2A client relies
// on and what keeps the endpoint closed to strangers: the card is served at CardPath without
// a key and parses as an A2A card of ProtocolVersion with exactly the two skills, bearer
// security and url at Path; a JSON-RPC request without a key, or with a key capgate does not
// know, is 401 with a Bearer challenge; and Path takes POST only. It runs no task and writes
// nothing. The error joins every check that failed, each named.
func SelfTest(ctx context.Context, h http.Handler) error {
	var errs []error
	fail := func(check, format string, a ...any) {
		errs = append(errs, fmt.Errorf("a2a self-test: %s: %s", check, fmt.Sprintf(format, a...)))
	}
	do := func(method, path, auth, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, method, "http://capgate.selftest"+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	res := do(http.MethodGet, CardPath, "", "")
	var card a2asdk.AgentCard
	switch {
	case res.Code != http.StatusOK:
		fail("the card", "GET %s answered %d, want 200", CardPath, res.Code)
	case json.Unmarshal(res.Body.Bytes(), &card) != nil:
		fail("the card", "it does not parse as an A2A agent card")
	default:
		var skills []string
		for _, s := range card.Skills {
			skills = append(skills, s.ID)
		}
		slices.Sort(skills)
		if !slices.Equal(skills, []string{SkillGiveTask, SkillTaskStatus}) {
			fail("the card", "skills %v, want exactly %s and %s", skills, SkillGiveTask, SkillTaskStatus)
		}
		if card.ProtocolVersion != ProtocolVersion || card.PreferredTransport != a2asdk.TransportProtocolJSONRPC {
			fail("the card", "protocolVersion %q over %q, want %q over JSONRPC", card.ProtocolVersion, card.PreferredTransport, ProtocolVersion)
		}
		if !strings.HasSuffix(card.URL, Path) {
			fail("the card", "url does not end in %s", Path)
		}
		if card.Capabilities.Streaming || card.Capabilities.PushNotifications {
			fail("the card", "it declares streaming or push notifications, which are not served")
		}
		scheme, ok := card.SecuritySchemes[SecurityScheme].(a2asdk.HTTPAuthSecurityScheme)
		if !ok || !strings.EqualFold(scheme.Scheme, "bearer") || len(card.Security) != 1 {
			fail("the card", "security is not one bearer scheme, required")
		} else if _, required := card.Security[0][SecurityScheme]; !required {
			fail("the card", "security does not require %s", SecurityScheme)
		}
	}

	const probe = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"selftest"}}`
	for _, c := range []struct{ name, auth string }{
		{"a call without a key", ""},
		{"a call with an unknown key", "Bearer cgk_selftest_no_such_key"},
	} {
		res := do(http.MethodPost, Path, c.auth, probe)
		if res.Code != http.StatusUnauthorized || res.Header().Get("WWW-Authenticate") != `Bearer realm="capgate"` {
			fail(c.name, "POST %s answered %d (WWW-Authenticate %q), want 401 with a Bearer challenge", Path, res.Code, res.Header().Get("WWW-Authenticate"))
		}
	}
	if res := do(http.MethodGet, Path, "", ""); res.Code != http.StatusMethodNotAllowed {
		fail("GET of the endpoint", "answered %d, want 405", res.Code)
	}
	return errors.Join(errs...)
}

// Gate returns h when it passes SelfTest, and otherwise, with SelfTest's error, a handler
// that answers every request 503 "not working right now": the gateway mounts what Gate
// returns at Path and CardPath, so that an endpoint that fails its gate never opens.
func Gate(ctx context.Context, h http.Handler) (http.Handler, error) {
	if err := SelfTest(ctx, h); err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the A2A endpoint is not working right now", http.StatusServiceUnavailable)
		}), err
	}
	return h, nil
}
