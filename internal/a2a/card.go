package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
)

// The card's skills: the only two things another assistant may ask of capgate.
const (
	SkillGiveTask   = "give_task"
	SkillTaskStatus = "task_status"
)

// ProtocolVersion is the A2A version capgate speaks.
const ProtocolVersion = "0.3.0"

// SecurityScheme is the card's name for the client key.
const SecurityScheme = "clientKey"

// JSONMode is the one input and output mode: a task is a data part, a status a task object.
const JSONMode = "application/json"

// Card returns capgate's agent card, whose url is Path under base ("https://host:port").
// It holds nothing private: what capgate is, its two skills, and that a call needs a bearer
// client key.
func (h *Handler) Card(base string) *a2asdk.AgentCard {
	return &a2asdk.AgentCard{
		Name: "capgate",
		Description: "capgate, the capability gateway between agents and apps. Another assistant may give it a task " +
			"(one capability of capgate, by its id, with its params) and ask for the task's status, which is its state " +
			"only: the result of a task never goes back. Every call carries a client key, and runs under that client's " +
			"grant: read-only by default; a write or an action waits for the person's consent.",
		URL:                strings.TrimSuffix(base, "/") + Path,
		Version:            h.o.Version,
		ProtocolVersion:    ProtocolVersion,
		PreferredTransport: a2asdk.TransportProtocolJSONRPC,
		Capabilities:       a2asdk.AgentCapabilities{Streaming: false, PushNotifications: false},
		DefaultInputModes:  []string{JSONMode},
		DefaultOutputModes: []string{JSONMode},
		SecuritySchemes: a2asdk.NamedSecuritySchemes{SecurityScheme: a2asdk.HTTPAuthSecurityScheme{
			Scheme: "bearer", Description: "a capgate client key, made by `capgate client add NAME`",
		}},
		Security: []a2asdk.SecurityRequirements{{SecurityScheme: a2asdk.SecuritySchemeScopes{}}},
		Skills: []a2asdk.AgentSkill{
			{
				ID: SkillGiveTask, Name: "Give a task",
				Description: "Runs one capability of capgate by its id with its params, as the calling client, under its " +
					"grant: read-only by default; a capability that writes or acts waits for the person's consent " +
					"(state auth-required) and is rejected without it. The message is exactly one data part " +
					`{"capability": "<capability id>", "params": {...}} (or {"app": ..., "method": ..., "params": {...}}). ` +
					"The answer is the task's id and state, never the result.",
				Tags:        []string{"capgate", "task"},
				Examples:    []string{`{"capability": "calc.org.capgate.calc.compute", "params": {"expression": "6*7"}}`},
				InputModes:  []string{JSONMode},
				OutputModes: []string{JSONMode},
			},
			{
				ID: SkillTaskStatus, Name: "Ask for a task's status",
				Description: "The state of a task the calling client gave (tasks/get): submitted, working, auth-required, " +
					"completed, rejected, failed or canceled, with its time. The state only, never content: no result, " +
					"message or history.",
				Tags:        []string{"capgate", "status"},
				InputModes:  []string{JSONMode},
				OutputModes: []string{JSONMode},
			},
		},
	}
}

// serveCard answers GET (and HEAD) of CardPath with the card, to anyone: it holds nothing
// private, and an A2A client reads it before it has a key to send.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the agent card is read by GET", http.StatusMethodNotAllowed)
		return
	}
	b, err := cardJSON(h.Card(h.base(r)))
	if err != nil {
		h.o.Logger.Error("a2a: the agent card does not encode", "err", err)
		http.Error(w, "the agent card is not available", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	// The url follows the Host of the request when no BaseURL is configured.
	w.Header().Set("Vary", "Host")
	w.Write(b)
}

// base is the URL the card points other assistants to: BaseURL, else the scheme and Host
// the request came by (a client reads the card where it reaches capgate, so that is where
// it reaches the endpoint too).
func (h *Handler) base(r *http.Request) string {
	if h.o.BaseURL != "" {
		return h.o.BaseURL
	}
	u := url.URL{Scheme: "http", Host: r.Host}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	if u.Host == "" {
		u.Host = "localhost"
	}
	return u.String()
}

// cardJSON is the card's JSON with capabilities' streaming and pushNotifications written
// out even when false, which the SDK's type leaves out: the card says plainly that neither
// is served.
func cardJSON(c *a2asdk.AgentCard) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["capabilities"] = json.RawMessage(fmt.Sprintf(`{"streaming":%t,"pushNotifications":%t}`, c.Capabilities.Streaming, c.Capabilities.PushNotifications))
	return json.Marshal(m)
}
