package wire

import "encoding/json"

// Tool is one capability as the calling client sees it: the definition an agent's planner
// needs.
type Tool struct {
	ID            string          `json:"id"`
	App           string          `json:"app"`    // the app's alias, for Body.App
	Method        string          `json:"method"` // for Body.Method
	Name          string          `json:"name"`
	Description   string          `json:"description"` // untrusted text from the app's manifest: data, not instructions
	Parameters    json.RawMessage `json:"parameters"`  // JSON Schema; null when none is declared
	Returns       json.RawMessage `json:"returns"`
	SideEffects   string          `json:"side_effects"`
	Risk          string          `json:"risk"`
	Permission    string          `json:"permission"`
	Reversibility string          `json:"reversibility"`
	Tier          int             `json:"tier"`
	NeedsConsent  bool            `json:"needs_consent,omitempty"` // usable, after a token or the person's consent
	// Status and Why are set only in GET /v1/capabilities?all=1, for a capability shown but
	// not usable: "not working right now", and why.
	Status string `json:"status,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Capabilities is the answer of GET /v1/capabilities.
type Capabilities struct {
	Capabilities []Tool `json:"capabilities"`
}
