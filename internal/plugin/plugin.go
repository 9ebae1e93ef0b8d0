// Package plugin installs, upgrades, approves and removes plugins under the lockfile, so that a
// plugin can never quietly ask for more than was reviewed: every install is verified, bounded by
// the host's intents and ports, compared with what is locked, and a widening waits for a person.
package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// Host is what an install is checked against. The zero Host trusts no key, supports no port and
// allows no private destination.
type Host struct {
	DataDir string             // where capgate.lock lives
	Trust   manifest.KeySource // trusted app keys; nil trusts none
	Intent  intent.Host        // sandbox root, catalog, environments, private policy
	Ports   *port.Registry     // the host's port descriptors; nil supports none

	// AllowDeprecated installs a version past its deprecated_after, by explicit policy.
	AllowDeprecated bool
	// AllowTier2Unsafe installs a plugin whose signature does not verify against a trusted
	// key. Its capabilities never act above read without consent.
	AllowTier2Unsafe bool

	Now func() time.Time // nil means time.Now

	// Test, when set, runs the conformance suites of a capability provider against its
	// program, started from the package as kept (Program): a suite that fails refuses the
	// install or upgrade, and the lock is not changed. A package without a program is not
	// tested (it does not run at all).
	Test func(doc *manifest.Document, prog Program) ([]conformance.Result, error)
}

// Options of one install or upgrade.
type Options struct {
	Upgrade  bool   // the plugin must already be installed (else it must not be)
	Approve  bool   // the person approves a widening now, having seen the diff
	Approver string // who approved, recorded in the lock
}

// Outcome says what an install or upgrade did. Refused is set when nothing changed because the
// package broke a rule (Problems) or the diff was a reject (Result.Reasons); Pending when a
// widening waits for approval; Applied when the lock now holds the new version.
type Outcome struct {
	AppID    string            `json:"app_id"`
	Version  string            `json:"version"`
	Tier     manifest.Tier     `json:"tier"`
	Digest   string            `json:"digest"`
	Signer   string            `json:"signer,omitempty"`
	Result   delta.Result      `json:"diff"`
	Problems manifest.Problems `json:"problems,omitempty"`
	Refused  bool              `json:"refused"`
	Pending  bool              `json:"pending"`
	Applied  bool              `json:"applied"`
	// Tests are the results of the capabilities' conformance suites, run at this install.
	Tests []conformance.Result `json:"tests,omitempty"`
	// Doc is the manifest the outcome is of, when it parsed.
	Doc *manifest.Document `json:"-"`
}

// ErrNotInstalled and ErrInstalled are returned for an upgrade of a plugin not installed and
// an install of one that is.
var (
	ErrNotInstalled = errors.New("plugin is not installed")
	ErrInstalled    = errors.New("plugin is already installed; use upgrade")
	ErrNoPending    = errors.New("no widening is pending for this plugin")
	// ErrPendingChanged is an ApproveSeen whose pending widening is no longer the one the
	// reviewer was shown: another install replaced it. Nothing is approved.
	ErrPendingChanged = errors.New("the widening pending for this plugin changed since it was shown")
)

// PendingHash names one pending widening: "sha256:" and the hex SHA-256 of the manifest it
// would install (canonical, signature included; it declares the package's digest). A
// reviewer shown a widening approves it by this hash (ApproveSeen), so that a widening
// replaced meanwhile is not approved in its place.
func PendingHash(p lock.Pending) string {
	sum := sha256.Sum256(p.Entry.Manifest)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// candidate is a package checked and ready to be compared with the lock.
type candidate struct {
	doc   *manifest.Document
	entry lock.Entry
}

// check opens the package at src and applies every rule that does not depend on the lock.
func (h *Host) check(src string, out *Outcome) (*candidate, error) {
	pkg, err := archive.Open(src)
	if err != nil {
		return nil, err
	}
	// The package's manifest.json (archive.Open refuses a manifest.yaml, the authoring form).
	doc, err := manifest.Parse(pkg.Manifest)
	if err != nil {
		var se *manifest.SyntaxError
		if errors.As(err, &se) {
			out.Problems = manifest.Problems{se.Problem()}
			out.Refused = true
			return nil, nil
		}
		return nil, err
	}
	m := doc.Manifest()
	out.AppID, out.Version, out.Doc = m.AppID, m.Version, doc
	out.Digest = pkg.Digest()

	ps := append(manifest.Problems(nil), doc.Validate()...)
	ih := h.Intent
	// Paths are resolved on disk too when the sandbox root exists here; where it does not,
	// nothing under it can lead outside, and the lexical rules are the whole check.
	ih.ResolveOnDisk = rootExists(ih.SandboxRoot)
	ps = append(ps, intent.Check(m, ih)...)
	ps = append(ps, port.Check(m, h.Ports)...)
	switch {
	case m.Digest == "":
		ps = append(ps, manifest.Problem{Path: "digest", Rule: "required in a plugin package: the content digest (capgate plugin digest prints it)"})
	case m.Digest != out.Digest:
		ps = append(ps, manifest.Problem{Path: "digest", Rule: "differs from the digest of the package's content as recomputed by the host"})
	}
	if m.Kind == manifest.KindCapabilityProvider {
		for name, ref := range map[string]*manifest.Reference{"sbom_ref": m.SBOMRef, "provenance_ref": m.ProvenanceRef} {
			if ref == nil {
				ps = append(ps, manifest.Problem{Path: name, Rule: "required for a capability provider"})
				continue
			}
			if rule := pkg.CheckReference(ref.Path, ref.Digest); rule != "" {
				ps = append(ps, manifest.Problem{Path: name, Rule: rule})
			}
		}
	}
	if m.DeprecatedAfter != nil && h.now().After(*m.DeprecatedAfter) && !h.AllowDeprecated {
		ps = append(ps, manifest.Problem{Path: "deprecated_after", Rule: "this version is past its deprecation date; it installs only under explicit policy"})
	}

	v := manifest.Verify(doc, h.Trust)
	out.Tier = v.Tier
	if v.Trusted() {
		out.Signer = keys.Fingerprint(v.Key)
		if m.Signer != "" && m.Signer != out.Signer {
			ps = append(ps, manifest.Problem{Path: "signer", Rule: "does not match the key that verified the signature"})
		}
	} else if v.Reason != manifest.ReasonInvalidManifest && !h.AllowTier2Unsafe {
		ps = append(ps, manifest.Problem{Path: "signature", Rule: "does not verify against a trusted key (" + string(v.Reason) + "); Tier 2 plugins install only when allowed"})
	}
	ps = sortProblems(ps)
	if len(ps) > 0 {
		out.Problems, out.Refused = ps, true
		return nil, nil
	}
	return &candidate{doc: doc, entry: lock.Entry{
		AppID: m.AppID, Version: m.Version, Digest: out.Digest, Signer: out.Signer,
		Tier: int(v.Tier), Manifest: doc.Raw(), Source: src, InstalledAt: h.now().UTC(),
	}}, nil
}

// test runs the candidate's conformance suites (Host.Test) and returns the problems of those
// that did not pass: a failed case, or a provider that could not be started to run them.
func (h *Host) test(cand *candidate, out *Outcome) manifest.Problems {
	if h.Test == nil || !conformance.HasSuites(cand.doc) {
		return nil
	}
	prog, err := ProgramOf(h.DataDir, cand.entry)
	if err != nil {
		return nil // no program: nothing runs, and nothing to test
	}
	results, err := h.Test(cand.doc, prog)
	out.Tests = results
	if err != nil {
		return manifest.Problems{{Path: "conformance_suite", Rule: "the provider could not be run to test it: " + err.Error()}}
	}
	var ps manifest.Problems
	caps := cand.doc.Manifest().Capabilities
	for _, r := range results {
		if !r.Status.Failed() {
			continue
		}
		i := slices.IndexFunc(caps, func(c manifest.Capability) bool { return c.ID == r.Capability })
		ps = append(ps, manifest.Problem{Path: fmt.Sprintf("capabilities[%d].conformance_suite", i), Rule: r.String()})
	}
	return ps
}

func rootExists(root string) bool {
	if root == "" {
		root = intent.DefaultSandboxRoot
	}
	_, err := os.Lstat(root)
	return err == nil
}

// sortProblems orders problems by path and drops exact repeats: the manifest validator and the
// port check both hold some rules (kind, port spelling), so that each stands alone.
func sortProblems(ps manifest.Problems) manifest.Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Rule < ps[j].Rule
	})
	return slices.Compact(ps)
}

// Install installs or upgrades the plugin package at src (a folder or a .tar.gz). A narrowing
// applies; a widening applies only with opts.Approve, else it is recorded as pending; a reject
// is refused. The lock is replaced atomically or not at all.
func (h *Host) Install(src string, opts Options) (Outcome, error) {
	var out Outcome
	cand, err := h.check(src, &out)
	if err != nil || cand == nil {
		return out, err
	}
	// The content checked is kept in the data folder, read-only, before the lock names it:
	// what runs is that copy, never the source, which may change or go.
	release, err := h.keep(src, cand.entry.AppID, cand.entry.Digest)
	if err != nil {
		return out, err
	}
	defer release()
	if ps := h.test(cand, &out); len(ps) > 0 {
		out.Problems, out.Refused = ps, true
		return out, nil
	}
	err = lock.Update(h.DataDir, func(f *lock.File) error {
		old, installed := f.Plugins[cand.entry.AppID]
		switch {
		case opts.Upgrade && !installed:
			return fmt.Errorf("%s: %w", cand.entry.AppID, ErrNotInstalled)
		case !opts.Upgrade && installed:
			return fmt.Errorf("%s: %w", cand.entry.AppID, ErrInstalled)
		}
		oldSide := delta.Side{}
		if installed {
			od, err := manifest.Parse(old.Manifest)
			if err != nil {
				return fmt.Errorf("lock entry %s: %w", old.AppID, err)
			}
			oldSide = delta.Side{Doc: od, Digest: old.Digest, Signer: old.Signer}
		}
		out.Result = delta.Diff(oldSide, delta.Side{Doc: cand.doc, Digest: cand.entry.Digest, Signer: cand.entry.Signer})
		switch out.Result.Verdict {
		case delta.Reject:
			out.Refused = true
			return nil
		case delta.Unchanged:
			return nil
		case delta.Widening:
			if !opts.Approve {
				changes, err := json.Marshal(out.Result)
				if err != nil {
					return err
				}
				if f.Pending == nil {
					f.Pending = map[string]lock.Pending{}
				}
				f.Pending[cand.entry.AppID] = lock.Pending{Entry: cand.entry, Changes: changes, Since: h.now().UTC()}
				out.Pending = true
				return nil
			}
			cand.entry.ApprovedBy = opts.Approver
		}
		if f.Plugins == nil {
			f.Plugins = map[string]lock.Entry{}
		}
		f.Plugins[cand.entry.AppID] = cand.entry
		delete(f.Pending, cand.entry.AppID)
		out.Applied = true
		return nil
	})
	return out, err
}

// Approve applies the widening pending for appID, after comparing it again with what is locked
// now: if the lock changed since, the diff is taken anew and a reject is still refused.
func (h *Host) Approve(appID, approver string) (Outcome, error) {
	return h.approve(appID, "", approver)
}

// ApproveSeen is Approve of the widening the reviewer was shown: only when the widening
// pending for appID is still the one named by seen (PendingHash), else ErrPendingChanged.
func (h *Host) ApproveSeen(appID, seen, approver string) (Outcome, error) {
	if seen == "" {
		return Outcome{}, fmt.Errorf("%s: %w", appID, ErrPendingChanged)
	}
	return h.approve(appID, seen, approver)
}

// approve is Approve; seen, when set, must be the pending widening's PendingHash.
func (h *Host) approve(appID, seen, approver string) (Outcome, error) {
	var out Outcome
	err := lock.Update(h.DataDir, func(f *lock.File) error {
		p, ok := f.Pending[appID]
		if !ok {
			return fmt.Errorf("%s: %w", appID, ErrNoPending)
		}
		if seen != "" && PendingHash(p) != seen {
			return fmt.Errorf("%s: %w", appID, ErrPendingChanged)
		}
		nd, err := manifest.Parse(p.Entry.Manifest)
		if err != nil {
			return fmt.Errorf("pending entry %s: %w", appID, err)
		}
		out.AppID, out.Version, out.Tier, out.Digest, out.Signer = appID, p.Entry.Version, manifest.Tier(p.Entry.Tier), p.Entry.Digest, p.Entry.Signer
		oldSide := delta.Side{}
		if old, ok := f.Plugins[appID]; ok {
			od, err := manifest.Parse(old.Manifest)
			if err != nil {
				return fmt.Errorf("lock entry %s: %w", appID, err)
			}
			oldSide = delta.Side{Doc: od, Digest: old.Digest, Signer: old.Signer}
		}
		out.Result = delta.Diff(oldSide, delta.Side{Doc: nd, Digest: p.Entry.Digest, Signer: p.Entry.Signer})
		if out.Result.Verdict == delta.Reject {
			out.Refused = true
			delete(f.Pending, appID)
			return nil
		}
		e := p.Entry
		e.ApprovedBy = approver
		e.InstalledAt = h.now().UTC()
		if f.Plugins == nil {
			f.Plugins = map[string]lock.Entry{}
		}
		f.Plugins[appID] = e
		delete(f.Pending, appID)
		out.Applied = true
		return nil
	})
	return out, err
}

// Remove removes an installed plugin and any widening pending for it.
func (h *Host) Remove(appID string) error {
	return lock.Update(h.DataDir, func(f *lock.File) error {
		_, installed := f.Plugins[appID]
		_, pending := f.Pending[appID]
		if !installed && !pending {
			return fmt.Errorf("%s: %w", appID, ErrNotInstalled)
		}
		delete(f.Plugins, appID)
		delete(f.Pending, appID)
		return nil
	})
}

// List returns the lock as it is.
func (h *Host) List() (*lock.File, error) { return lock.Load(h.DataDir) }
