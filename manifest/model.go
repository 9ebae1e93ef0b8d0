package manifest

import (
	"encoding/json"
	"time"
)

// Manifest is what an app declares: one JSON document, a superset of the manifest document's
// CapabilityManifest. The plugin and definitions documents add optional fields, each with a
// default that keeps older manifests valid.
//
// A Manifest is a decoded view of a Document. Defaults are filled in (see each field); the
// signature covers the document as received, not this view, so fields capgate does not know
// are signed too.
//
// Evolution: a new field must be optional, with a default that leaves every existing manifest
// meaning what it meant; an enum may gain values only where an unknown value is refused.
type Manifest struct {
	// From the manifest document.
	AppID           string       `json:"app_id"`
	Version         string       `json:"version"`          // SemVer 2.0.0
	ManifestVersion string       `json:"manifest_version"` // major.minor, default "1.0"
	Capabilities    []Capability `json:"capabilities"`
	Events          []Event      `json:"events,omitempty"`
	Signature       string       `json:"signature,omitempty"` // "ed25519:<base64>"; empty or null when unsigned

	// From the plugin document.
	Kind             Kind               `json:"kind"` // default capability_provider
	Ports            []string           `json:"ports,omitempty"`
	Digest           string             `json:"digest,omitempty"`
	Signer           string             `json:"signer,omitempty"`
	SBOMRef          *Reference         `json:"sbom_ref,omitempty"`
	ProvenanceRef    *Reference         `json:"provenance_ref,omitempty"`
	PreviousVersion  string             `json:"previous_version,omitempty"`
	PermissionsDelta []CapabilityChange `json:"permissions_delta,omitempty"`
	DeprecatedAfter  *time.Time         `json:"deprecated_after,omitempty"` // RFC 3339
}

// Capability is one operation of an app.
type Capability struct {
	// From the manifest document.
	ID                   string          `json:"id"` // {domain}.{app_id}.{action}
	Name                 string          `json:"name"`
	Description          string          `json:"description"` // untrusted, at most MaxDescriptionBytes
	Category             Category        `json:"category"`
	Parameters           json.RawMessage `json:"parameters"`            // a JSON Schema, draft-07 unless $schema names another
	Returns              json.RawMessage `json:"returns"`               // a JSON Schema, as Parameters
	SideEffects          SideEffect      `json:"side_effects"`          // default system: undeclared is the worst case
	ConfirmationRequired bool            `json:"confirmation_required"` // default false
	UndoWindowMS         *int64          `json:"undo_window_ms"`        // nil: no undo
	Version              string          `json:"version"`               // major.minor, default "1.0"
	AuthLevel            AuthLevel       `json:"auth_level"`            // default user

	// From the token document.
	Permission string `json:"permission"` // default the capability's id
	Risk       Risk   `json:"risk"`       // default derived from SideEffects by RiskFor

	// From the plugin document.
	Idempotency       Idempotency        `json:"idempotency"` // default none
	DryRun            bool               `json:"dry_run"`
	Compensation      string             `json:"compensation,omitempty"` // id of another capability of this manifest
	CredentialIntents []string           `json:"credential_intents,omitempty"`
	NetworkIntents    []NetworkIntent    `json:"network_intents,omitempty"`
	FilesystemIntents []FilesystemIntent `json:"filesystem_intents,omitempty"`
	EnvironmentScope  []string           `json:"environment_scope,omitempty"`
	Evidence          []string           `json:"evidence,omitempty"`
	TimeoutMS         int64              `json:"timeout_ms"` // 0: no limit
	ResourceBudget    map[string]int64   `json:"resource_budget,omitempty"`
	ConformanceSuite  string             `json:"conformance_suite,omitempty"`

	// From the definitions document.
	Implements      string            `json:"implements,omitempty"` // definition name@major.minor
	Extends         string            `json:"extends,omitempty"`    // definition name@major.minor
	Examples        []json.RawMessage `json:"examples,omitempty"`
	AutonomyCeiling Autonomy          `json:"autonomy_ceiling"` // default act
	Reversibility   Reversibility     `json:"reversibility"`    // default reversible with an undo window, else irreversible
	DataClasses     []string          `json:"data_classes,omitempty"`
	Surface         []string          `json:"surface,omitempty"`
}

// Event is a custom event an app emits.
type Event struct {
	EventType     string          `json:"event_type"`
	Description   string          `json:"description"`
	PayloadSchema json.RawMessage `json:"payload_schema,omitempty"` // a JSON Schema, as Parameters
}

// NetworkIntent is one egress destination a capability may reach.
type NetworkIntent struct {
	Host string `json:"host"`
	Port int    `json:"port"` // 1 to 65535
}

// FilesystemIntent is one sandbox path a capability may touch.
type FilesystemIntent struct {
	Path string         `json:"path"`
	Mode FilesystemMode `json:"mode"` // default read_only
}

// Reference names a file inside a plugin package and its digest (SBOM, provenance).
type Reference struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// CapabilityChange is one entry of a declared permissions delta: absent Previous means added,
// absent Current means removed.
type CapabilityChange struct {
	Name     string          `json:"name"`
	Previous json.RawMessage `json:"previous,omitempty"`
	Current  json.RawMessage `json:"current,omitempty"`
}

// Capability returns the capability with the given id, or nil.
func (m *Manifest) Capability(id string) *Capability {
	for i := range m.Capabilities {
		if m.Capabilities[i].ID == id {
			return &m.Capabilities[i]
		}
	}
	return nil
}

// applyDefaults fills in the default of every optional field left out.
func (m *Manifest) applyDefaults() {
	if m.ManifestVersion == "" {
		m.ManifestVersion = "1.0"
	}
	if m.Kind == "" {
		m.Kind = KindCapabilityProvider
	}
	for i := range m.Capabilities {
		c := &m.Capabilities[i]
		if c.SideEffects == "" {
			c.SideEffects = SideEffectSystem
		}
		if c.Version == "" {
			c.Version = "1.0"
		}
		if c.AuthLevel == "" {
			c.AuthLevel = AuthUser
		}
		if c.Permission == "" {
			c.Permission = c.ID
		}
		if c.Risk == "" {
			c.Risk = RiskFor(c.SideEffects)
		}
		if c.Idempotency == "" {
			c.Idempotency = IdempotencyNone
		}
		if c.AutonomyCeiling == "" {
			c.AutonomyCeiling = AutonomyAct
		}
		if c.Reversibility == "" {
			c.Reversibility = Irreversible
			if c.UndoWindowMS != nil && *c.UndoWindowMS > 0 {
				c.Reversibility = Reversible
			}
		}
		for j := range c.FilesystemIntents {
			if c.FilesystemIntents[j].Mode == "" {
				c.FilesystemIntents[j].Mode = ModeReadOnly
			}
		}
	}
}
