package lock

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// Validate checks every rule of the lockfile and returns the problems found, each an *Error,
// joined with errors.Join; nil means valid. Save checks it before writing and Load after
// reading, so a file Save writes is one Load accepts. The rules:
//
//   - lockfile_version is FormatVersion;
//   - every key is a valid app id and equals its entry's app_id;
//   - version is SemVer 2.0.0, digest is "sha256:" and 64 lowercase hex digits, signer is a
//     fingerprint of that form or empty, tier is 1 or 2, and tier 1 has a signer;
//   - manifest is RFC 8785 canonical JSON that manifest.Parse reads, whose app_id and version
//     are the entry's;
//   - source and approved_by are UTF-8 within their limits, installed_at is set;
//   - a pending widening's changes are strict JSON and its since is set.
//
// Validate does not compile the manifest's schemas or verify its signature: that was done
// at install, and the lockfile records the outcome.
func (f *File) Validate() error {
	var ps problems
	if f.Version != FormatVersion {
		ps.add(&Error{Field: "lockfile_version", Rule: "must be " + strconv.Itoa(FormatVersion), Err: ErrVersion})
		return ps.err()
	}
	for i, key := range slices.Sorted(maps.Keys(f.Plugins)) {
		at := entryAt(&ps, "plugins", i, key)
		at.entry(f.Plugins[key], "")
	}
	for i, key := range slices.Sorted(maps.Keys(f.Pending)) {
		at := entryAt(&ps, "pending", i, key)
		p := f.Pending[key]
		at.entry(p.Entry, "entry")
		if len(p.Changes) == 0 {
			at.add("changes", "must be set", nil)
		} else if _, err := jcs.Parse(p.Changes, &jcs.Options{MaxDepth: maxDepth, MaxBytes: MaxFileBytes}); err != nil {
			at.jsonError("changes", err)
		}
		at.time("since", p.Since)
	}
	return ps.err()
}

// where is one entry being validated.
type where struct {
	ps       *problems
	section  string
	name     string // the key, or "#N" when the key is not a valid app id
	keyValid bool
	key      string
}

func entryAt(ps *problems, section string, i int, key string) *where {
	w := &where{ps: ps, section: section, name: key, key: key}
	if _, err := manifest.ParseAppID(key); err != nil {
		w.name = "#" + strconv.Itoa(i)
		w.add("", "key is not a valid app id: "+grammarRule(err), err)
	} else {
		w.keyValid = true
	}
	return w
}

// grammarRule returns the rule of an error of manifest's Parse functions without their
// "what: invalid syntax: " prefix, which the field path already says.
func grammarRule(err error) string {
	msg := err.Error()
	if _, rule, ok := strings.Cut(msg, manifest.ErrSyntax.Error()+": "); ok {
		return rule
	}
	return msg
}

func (w *where) add(field, rule string, err error) {
	w.ps.add(&Error{Section: w.section, Entry: w.name, Field: field, Rule: rule, Err: err})
}

// jsonError adds a problem for a jcs or manifest syntax error found in field, with the path
// inside it.
func (w *where) jsonError(field string, err error) {
	var je *jcs.SyntaxError
	var me *manifest.SyntaxError
	switch {
	case errors.As(err, &me):
		w.add(joinField(field, me.Path), me.Rule, err)
	case errors.As(err, &je):
		w.add(joinField(field, je.Path), je.Rule, err)
	default:
		w.add(field, "is not strict JSON", err)
	}
}

func (w *where) entry(e Entry, prefix string) {
	field := func(name string) string { return joinField(prefix, name) }
	if _, err := manifest.ParseAppID(e.AppID); err != nil {
		w.add(field("app_id"), grammarRule(err), err)
	} else if w.keyValid && e.AppID != w.key {
		w.add(field("app_id"), "must equal the entry's key", nil)
	}
	if _, err := manifest.ParseVersion(e.Version); err != nil {
		w.add(field("version"), grammarRule(err), err)
	}
	if _, err := manifest.ParseDigest(e.Digest); err != nil {
		w.add(field("digest"), grammarRule(err), err)
	}
	if e.Signer != "" {
		if _, err := manifest.ParseDigest(e.Signer); err != nil {
			w.add(field("signer"), `must be a key fingerprint, "sha256:" and 64 lowercase hex digits, or empty`, err)
		}
	}
	switch e.Tier {
	case 1:
		if e.Signer == "" {
			w.add(field("signer"), "must be set at tier 1", nil)
		}
	case 2:
	default:
		w.add(field("tier"), "must be 1 or 2", nil)
	}
	w.manifest(field("manifest"), e)
	w.text(field("source"), e.Source, MaxSourceBytes)
	w.text(field("approved_by"), e.ApprovedBy, MaxApprovedByBytes)
	w.time(field("installed_at"), e.InstalledAt)
}

func (w *where) manifest(field string, e Entry) {
	if len(e.Manifest) == 0 {
		w.add(field, "must be set", nil)
		return
	}
	c, err := jcs.Canonicalize(e.Manifest)
	if err != nil {
		w.jsonError(field, err)
		return
	}
	if !bytes.Equal(c, e.Manifest) {
		w.add(field, "must be in RFC 8785 canonical form", nil)
		return
	}
	doc, err := manifest.Parse(e.Manifest)
	if err != nil {
		w.jsonError(field, err)
		return
	}
	m := doc.Manifest()
	if m.AppID != e.AppID {
		w.add(joinField(field, "app_id"), "must equal the entry's app_id", nil)
	}
	if m.Version != e.Version {
		w.add(joinField(field, "version"), "must equal the entry's version", nil)
	}
}

func (w *where) text(field, s string, limit int) {
	switch {
	case len(s) > limit:
		w.add(field, fmt.Sprintf("longer than %d bytes", limit), nil)
	case !utf8.ValidString(s):
		w.add(field, "must be UTF-8", nil)
	}
}

func (w *where) time(field string, t time.Time) {
	switch y := t.UTC().Year(); {
	case t.IsZero():
		w.add(field, "must be set", nil)
	case y < 0 || y > 9999:
		// time.Time.MarshalJSON refuses such years: RFC 3339 has four digits.
		w.add(field, "year must be within 0 to 9999", nil)
	}
}
