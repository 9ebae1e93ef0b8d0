package lock

import (
	"encoding/json"
	"time"
)

// FileName is the lockfile's name inside capgate's data folder.
const FileName = "capgate.lock"

// FormatVersion is the only lockfile_version this package reads and writes.
//
// Evolution: a new field that old readers may ignore still needs a new version, because Load
// refuses unknown members; a reader meeting a version it does not know refuses the whole file
// instead of guessing, so an older capgate never rewrites a newer lockfile and drops what it
// did not understand.
const FormatVersion = 1

// File is the whole lockfile. Load always returns non-nil maps; Save writes nil maps as empty.
type File struct {
	Version int                `json:"lockfile_version"`  // FormatVersion
	Plugins map[string]Entry   `json:"plugins"`           // by app_id
	Pending map[string]Pending `json:"pending,omitempty"` // widenings awaiting approval, by app_id
}

// Entry is one installed plugin as the host verified it at install.
type Entry struct {
	AppID   string `json:"app_id"`
	Version string `json:"version"` // SemVer 2.0.0
	Digest  string `json:"digest"`  // "sha256:<hex>", recomputed by the host
	// Signer is the fingerprint "sha256:<hex>" of the key the manifest verified against, or
	// "" for an unsigned plugin, which is Tier 2.
	Signer string `json:"signer"`
	Tier   int    `json:"tier"` // 1 (signature verified against a trusted key) or 2
	// Manifest is the installed manifest in RFC 8785 canonical form, signature included
	// (manifest.Document.Raw). Its app_id and version are the entry's.
	Manifest    json.RawMessage `json:"manifest"`
	Source      string          `json:"source,omitempty"` // where it was installed from
	InstalledAt time.Time       `json:"installed_at"`     // written in UTC
	ApprovedBy  string          `json:"approved_by,omitempty"`
}

// Pending is a widening awaiting a reviewer's approval.
type Pending struct {
	Entry Entry `json:"entry"` // what would be installed
	// Changes is the diff shown to the reviewer, any JSON value; this package only checks
	// that it is strict JSON, and stores and returns it compact.
	Changes json.RawMessage `json:"changes"`
	Since   time.Time       `json:"since"` // written in UTC
}

// New returns an empty lockfile of the current version, what Load returns for a missing file.
func New() *File {
	return &File{Version: FormatVersion, Plugins: map[string]Entry{}, Pending: map[string]Pending{}}
}
