// Package hostpolicy is the host's signed policy: the few things only the operator may allow,
// such as private network destinations for plugins and the ceilings on their timeouts and
// budgets. The policy is a JSON document signed like a manifest (Ed25519 over its RFC 8785 form
// with the signature member removed) with the key trusted for the id "capgate.policy", so that
// a process that can write capgate's configuration cannot by that alone open the private network.
package hostpolicy

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"sort"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// KeyID is the id whose trusted key signs the policy: {trusted_dir}/capgate.policy.pub.
const KeyID = "capgate.policy"

// MaxFileBytes bounds a policy file: a few prefixes and numbers.
const MaxFileBytes = 64 << 10

// MaxTriggerDays is the longest trigger_max_days a policy may set: ten years, beyond which a
// trigger is no longer an errand but a standing order nobody remembers.
const MaxTriggerDays = 3650

// ErrUnsigned, ErrBadSignature and ErrInvalid are the ways a policy is refused.
var (
	ErrUnsigned     = errors.New("the policy is not signed")
	ErrBadSignature = errors.New("the policy's signature does not verify with a trusted policy key")
	ErrInvalid      = errors.New("invalid policy")
)

// Policy is what the signed policy allows. The zero Policy allows nothing beyond the defaults.
type Policy struct {
	// AllowPrivate are private destinations (within 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16
	// or fc00::/7) plugins may declare.
	AllowPrivate []netip.Prefix
	// TimeoutCeilingMS caps every capability's effective timeout; 0 means no ceiling.
	TimeoutCeilingMS int64
	// BudgetCeiling caps each named resource budget.
	BudgetCeiling map[string]int64
	// Providers is the host's rule on the providers of a definition ("providers": {"denied":
	// [app ids], "paths": [paths]}): a denied provider is never chosen, and when paths are
	// given only those are taken (definition.Choose).
	Providers definition.Policy
	// TriggerMaxDays bounds a trigger's end date, in days from its proposal
	// ("trigger_max_days", 1 to 3650); 0 means capgate's default (90 days).
	TriggerMaxDays int64
}

var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

var fields = map[string]bool{"policy_version": true, "allow_private": true, "timeout_ceiling_ms": true, "budget_ceiling": true, "providers": true, "trigger_max_days": true, "signature": true}

// Parse reads and checks a policy document without verifying its signature: for Sign and for
// reporting what a policy says. Problems name the field, never the value.
func Parse(data []byte) (Policy, error) {
	if len(data) > MaxFileBytes {
		return Policy{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxFileBytes)
	}
	root, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxDepth: 8})
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if root.Kind != jcs.Object {
		return Policy{}, fmt.Errorf("%w: must be a JSON object", ErrInvalid)
	}
	var errs []error
	bad := func(path, rule string) { errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, path, rule)) }
	for _, m := range root.Members {
		if !fields[m.Name] {
			bad("policy", "has a member capgate does not know")
		}
	}
	if v, ok := root.Get("policy_version"); !ok || v.Kind != jcs.String || v.Str != "1.0" {
		bad("policy_version", `must be "1.0"`)
	}
	var p Policy
	if v, ok := root.Get("allow_private"); ok {
		if v.Kind != jcs.Array {
			bad("allow_private", "must be an array of CIDR prefixes")
		}
		for i, it := range v.Items {
			path := fmt.Sprintf("allow_private[%d]", i)
			pfx, err := netip.ParsePrefix(it.Str)
			switch {
			case it.Kind != jcs.String || err != nil:
				bad(path, "must be a CIDR prefix such as 10.1.0.0/16")
			case pfx.Masked() != pfx || pfx.String() != it.Str:
				bad(path, "must be written in canonical form with no host bits set")
			case !insidePrivate(pfx):
				bad(path, "must lie within 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or fc00::/7")
			default:
				p.AllowPrivate = append(p.AllowPrivate, pfx)
			}
		}
	}
	if v, ok := root.Get("timeout_ceiling_ms"); ok {
		if n, ok := count(v); ok {
			p.TimeoutCeilingMS = n
		} else {
			bad("timeout_ceiling_ms", "must be a non-negative integer")
		}
	}
	if v, ok := root.Get("budget_ceiling"); ok {
		if v.Kind != jcs.Object {
			bad("budget_ceiling", "must be an object of non-negative integers")
		}
		p.BudgetCeiling = map[string]int64{}
		for _, m := range v.Members {
			if n, ok := count(m.Value); ok {
				p.BudgetCeiling[m.Name] = n
			} else {
				bad("budget_ceiling", "must be an object of non-negative integers")
			}
		}
	}
	if v, ok := root.Get("providers"); ok {
		p.Providers = parseProviders(v, bad)
	}
	if v, ok := root.Get("trigger_max_days"); ok {
		if n, ok := count(v); ok && n >= 1 && n <= MaxTriggerDays {
			p.TriggerMaxDays = n
		} else {
			bad("trigger_max_days", fmt.Sprintf("must be an integer from 1 to %d", MaxTriggerDays))
		}
	}
	if v, ok := root.Get("signature"); ok && v.Kind != jcs.String {
		bad("signature", "must be a string")
	}
	if len(errs) > 0 {
		return Policy{}, errors.Join(errs...)
	}
	sort.Slice(p.AllowPrivate, func(i, j int) bool { return p.AllowPrivate[i].String() < p.AllowPrivate[j].String() })
	return p, nil
}

// parseProviders reads the providers member: {"denied": [app ids], "paths": [paths]}, each
// list of distinct, valid entries.
func parseProviders(v jcs.Value, bad func(path, rule string)) definition.Policy {
	var pol definition.Policy
	if v.Kind != jcs.Object {
		bad("providers", `must be an object of "denied" and "paths"`)
		return pol
	}
	for _, m := range v.Members {
		if m.Name != "denied" && m.Name != "paths" {
			bad("providers", "has a member capgate does not know")
		}
	}
	if d, ok := v.Get("denied"); ok {
		if d.Kind != jcs.Array {
			bad("providers.denied", "must be an array of app ids")
		}
		for i, it := range d.Items {
			path := fmt.Sprintf("providers.denied[%d]", i)
			if _, err := manifest.ParseAppID(it.Str); it.Kind != jcs.String || err != nil {
				bad(path, "must be an app id (reverse-DNS)")
			} else if slices.Contains(pol.Denied, it.Str) {
				bad(path, "listed twice")
			} else {
				pol.Denied = append(pol.Denied, it.Str)
			}
		}
	}
	if ps, ok := v.Get("paths"); ok {
		if ps.Kind != jcs.Array {
			bad("providers.paths", "must be an array of paths")
		}
		for i, it := range ps.Items {
			path := fmt.Sprintf("providers.paths[%d]", i)
			p := definition.Path(it.Str)
			if it.Kind != jcs.String || p.Rank() == 0 {
				bad(path, "must be one of api, tool_server, os_intent, browser, handoff")
			} else if slices.Contains(pol.Paths, p) {
				bad(path, "listed twice")
			} else {
				pol.Paths = append(pol.Paths, p)
			}
		}
	}
	return pol
}

func count(v jcs.Value) (int64, bool) {
	if v.Kind != jcs.Number || v.Float < 0 || v.Float != math.Trunc(v.Float) || v.Float > 1<<53 {
		return 0, false
	}
	return int64(v.Float), true
}

func insidePrivate(p netip.Prefix) bool {
	for _, r := range privateRanges {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// signedBytes returns the canonical bytes the signature covers and the signature text.
func signedBytes(data []byte) ([]byte, string, bool, error) {
	root, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxDepth: 8})
	if err != nil {
		return nil, "", false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	stripped := root
	stripped.Members = nil
	var sig string
	var signed bool
	for _, m := range root.Members {
		if m.Name == "signature" {
			sig, signed = m.Value.Str, m.Value.Kind == jcs.String
			continue
		}
		stripped.Members = append(stripped.Members, m)
	}
	canon, err := stripped.AppendCanonical(nil)
	return canon, sig, signed, err
}

// Verify parses data and verifies its signature against the keys trusted for KeyID.
func Verify(data []byte, keys manifest.KeySource) (Policy, error) {
	p, err := Parse(data)
	if err != nil {
		return Policy{}, err
	}
	canon, text, signed, err := signedBytes(data)
	if err != nil {
		return Policy{}, err
	}
	if !signed {
		return Policy{}, ErrUnsigned
	}
	sig, err := manifest.ParseSignature(text)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	if keys == nil {
		return Policy{}, ErrBadSignature
	}
	trusted, err := keys.Keys(KeyID)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	for _, k := range trusted {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, canon, sig) {
			return p, nil
		}
	}
	return Policy{}, ErrBadSignature
}

// Load reads the policy file at path and verifies it as Verify does.
func Load(path string, keys manifest.KeySource) (Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	p, err := Verify(data, keys)
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// Sign checks data as a policy and returns it, compact, with its signature set.
func Sign(data []byte, key ed25519.PrivateKey) ([]byte, error) {
	if _, err := Parse(data); err != nil {
		return nil, err
	}
	canon, _, _, err := signedBytes(data)
	if err != nil {
		return nil, err
	}
	sig := manifest.FormatSignature(ed25519.Sign(key, canon))
	// canon is a JSON object: insert the signature member before its closing brace.
	out := append([]byte(nil), canon[:len(canon)-1]...)
	if len(canon) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"signature":"`...)
	out = append(out, sig...)
	out = append(out, "\"}\n"...)
	return out, nil
}
