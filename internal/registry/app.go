package registry

import (
	"fmt"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// App is a registered app as the registry sees it: its manifest, verified against the trusted
// keys when it was registered or last loaded. An App handed out by the registry is shared
// with every other reader and must not be modified.
//
// The registry is where a manifest's ids become value types: it indexes only manifests that
// passed Validate, parses their app id and capability ids once, when it indexes them, and
// hands out the parsed values (App.ID, Capability.ID, Capability.Permission) for the broker
// to carry. Its lookups (App, Method, Capability, Pinned, ...) take names as text, since
// they resolve what a front or the operator was sent.
type App struct {
	ID      manifest.AppID  // the manifest's app_id
	Alias   string          // short name for the IPC "app" field, unique
	Tier    manifest.Tier   // Tier1 when the signature verified against a trusted key
	Reason  manifest.Reason // why this tier
	Detail  string          // a sentence for people on why this tier, "" at Tier 1
	Enabled bool            // a disabled app's capabilities are hidden from call lookups
	Doc     *manifest.Document
}

// Capability is one capability of a registered app, ready for a call. ID and Permission are
// its id and the permission a token must grant for it (its id when it declares none), parsed
// when it was indexed. Cap is the manifest's capability with every default filled in
// (permission, risk, side effects, ...). Params and
// Returns are the compiled schemas, nil when the capability declares none. Classes are its
// params' classes (which are paths, cwds, commands, command input and text), compiled with
// the schema when the capability is indexed; nil (never complete) without a schema. Every
// pointer is shared with other readers and must not be modified.
type Capability struct {
	ID         manifest.CapabilityID
	Permission manifest.Permission
	App        *App
	Cap        *manifest.Capability
	Params     *manifest.Schema
	Returns    *manifest.Schema
	Classes    *manifest.Classes
}

// Skipped is a stored app that New or Reload could not index: its manifest no longer parses,
// no longer passes the format's rules, or names another app_id than its record. Err says
// which (a *manifest.SyntaxError, manifest.Problems, or ErrStoredAppMismatch); like every
// error of a manifest it names field paths, never values.
type Skipped struct {
	AppID string // the record's key as the store holds it: text, for the record may be what is wrong
	Err   error
}

// checkAlias reports whether alias matches ^[a-z][a-z0-9_-]{0,31}$.
func checkAlias(alias string) error {
	if alias == "" || len(alias) > MaxAliasBytes {
		return fmt.Errorf("%w: must be 1 to %d bytes", ErrInvalidAlias, MaxAliasBytes)
	}
	if c := alias[0]; c < 'a' || c > 'z' {
		return fmt.Errorf("%w: must start with a lowercase letter", ErrInvalidAlias)
	}
	for i := 1; i < len(alias); i++ {
		c := alias[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return fmt.Errorf("%w: must be lowercase letters, digits, '_' and '-'", ErrInvalidAlias)
		}
	}
	return nil
}

// defaultAlias is the last label of an app id: "terminal" for "org.capgate.terminal".
func defaultAlias(appID manifest.AppID) string {
	s := appID.String()
	return s[strings.LastIndexByte(s, '.')+1:]
}
