package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is returned, wrapped, by every Parse function of this file for text that breaks
// its grammar. The error names the grammar, never the text.
var ErrSyntax = errors.New("invalid syntax")

func syntaxError(what, rule string) error {
	return fmt.Errorf("%s: %w: %s", what, ErrSyntax, rule)
}

// AppID is a reverse-DNS application identifier such as "org.xfce.mousepad": at least two
// dot-separated labels of lowercase ASCII letters, digits and hyphens, each starting with a
// letter and ending with a letter or digit, at most MaxAppIDBytes bytes. The zero AppID is
// invalid and prints as "".
type AppID struct{ s string }

// ParseAppID parses s as an AppID.
func ParseAppID(s string) (AppID, error) {
	if rule := appIDRule(s); rule != "" {
		return AppID{}, syntaxError("app id", rule)
	}
	return AppID{s}, nil
}

// MustParseAppID is ParseAppID for an id the program itself spells (a constant, a test's
// literal): it panics when s is no AppID, as netip.MustParseAddr does.
func MustParseAppID(s string) AppID { return must(ParseAppID(s)) }

func must[T any](v T, err error) T {
	if err != nil {
		panic("manifest: " + err.Error())
	}
	return v
}

func appIDRule(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > MaxAppIDBytes {
		return fmt.Sprintf("longer than %d bytes", MaxAppIDBytes)
	}
	if !strings.Contains(s, ".") {
		return "needs at least two dot-separated labels"
	}
	// Label by label with Cut rather than Split: a capability id's app id is checked on
	// every parse of one, which then allocates nothing.
	for rest, more := s, true; more; {
		var l string
		l, rest, more = strings.Cut(rest, ".")
		if !isDNSLabel(l) {
			return "each label is lowercase letters, digits and hyphens, starts with a letter and ends with a letter or digit"
		}
	}
	return ""
}

func isDNSLabel(l string) bool {
	if l == "" || !isLower(l[0]) {
		return false
	}
	last := l[len(l)-1]
	if !isLower(last) && !isDigit(last) {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !isLower(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// IsValid reports whether id was made by ParseAppID.
func (id AppID) IsValid() bool { return id.s != "" }

// String returns the identifier.
func (id AppID) String() string { return id.s }

// MarshalText implements encoding.TextMarshaler.
func (id AppID) MarshalText() ([]byte, error) { return []byte(id.s), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseAppID.
func (id *AppID) UnmarshalText(b []byte) error {
	v, err := ParseAppID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// CapabilityID names one operation of an app: {domain}.{app_id}.{action}, such as
// "editor.org.xfce.mousepad.read". The domain is [a-z][a-z0-9]*, the action [a-z][a-z0-9_]*,
// and the app id in the middle may itself hold dots. Two-part names are permissions or
// definition names, never capability ids. The zero CapabilityID is invalid.
type CapabilityID struct {
	s              string
	domain, action int // byte offsets of the first and last dot
}

// ParseCapabilityID parses s as a CapabilityID. It checks the grammar only; that the app id is
// the declaring manifest's own is a rule of the manifest (see Validate).
func ParseCapabilityID(s string) (CapabilityID, error) {
	if len(s) > MaxCapabilityIDBytes {
		return CapabilityID{}, syntaxError("capability id", fmt.Sprintf("longer than %d bytes", MaxCapabilityIDBytes))
	}
	first, last := strings.IndexByte(s, '.'), strings.LastIndexByte(s, '.')
	if first < 0 || first == last {
		return CapabilityID{}, syntaxError("capability id", "must be {domain}.{app_id}.{action}")
	}
	if !isWord(s[:first], false) {
		return CapabilityID{}, syntaxError("capability id", "domain must match [a-z][a-z0-9]*")
	}
	if !isWord(s[last+1:], true) {
		return CapabilityID{}, syntaxError("capability id", "action must match [a-z][a-z0-9_]*")
	}
	if rule := appIDRule(s[first+1 : last]); rule != "" {
		return CapabilityID{}, syntaxError("capability id", "app id part: "+rule)
	}
	return CapabilityID{s: s, domain: first, action: last}, nil
}

// MustParseCapabilityID is ParseCapabilityID for an id the program itself spells: it panics
// when s is no CapabilityID.
func MustParseCapabilityID(s string) CapabilityID { return must(ParseCapabilityID(s)) }

// isWord reports whether s matches [a-z][a-z0-9]* (or [a-z][a-z0-9_]* with underscore).
func isWord(s string, underscore bool) bool {
	if s == "" || !isLower(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isLower(c) && !isDigit(c) && (!underscore || c != '_') {
			return false
		}
	}
	return true
}

// IsValid reports whether id was made by ParseCapabilityID.
func (id CapabilityID) IsValid() bool { return id.s != "" }

// String returns the id.
func (id CapabilityID) String() string { return id.s }

// Domain returns the first part of the id.
func (id CapabilityID) Domain() string {
	if !id.IsValid() {
		return ""
	}
	return id.s[:id.domain]
}

// AppID returns the app id in the middle of the id.
func (id CapabilityID) AppID() AppID {
	if !id.IsValid() {
		return AppID{}
	}
	return AppID{id.s[id.domain+1 : id.action]}
}

// Action returns the last part of the id.
func (id CapabilityID) Action() string {
	if !id.IsValid() {
		return ""
	}
	return id.s[id.action+1:]
}

// Permission returns the id as a permission, the default permission of a capability that
// declares none: every capability id is also a permission (see Permission). The zero
// CapabilityID gives the zero Permission. It allocates nothing.
func (id CapabilityID) Permission() Permission { return Permission{id.s} }

// MarshalText implements encoding.TextMarshaler.
func (id CapabilityID) MarshalText() ([]byte, error) { return []byte(id.s), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseCapabilityID.
func (id *CapabilityID) UnmarshalText(b []byte) error {
	v, err := ParseCapabilityID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Permission is the scope a token must grant to call a capability: a dotted name of at least
// two segments such as "fs.read" or "app.terminal.execute". Each segment starts with a
// lowercase letter and holds lowercase letters, digits, underscores and hyphens, ending with a
// letter, digit or underscore, so that every capability id is also a permission (a
// capability's permission defaults to its id). Wildcard grants ("fs.*") are token grants,
// not permissions. The zero Permission is invalid.
type Permission struct{ s string }

// ParsePermission parses s as a Permission.
func ParsePermission(s string) (Permission, error) {
	if len(s) > MaxCapabilityIDBytes {
		return Permission{}, syntaxError("permission", fmt.Sprintf("longer than %d bytes", MaxCapabilityIDBytes))
	}
	if !strings.Contains(s, ".") {
		return Permission{}, syntaxError("permission", "needs at least two dot-separated segments")
	}
	if !IsPermissionPrefix(s) {
		return Permission{}, syntaxError("permission", "each segment matches [a-z]([a-z0-9_-]*[a-z0-9_])?")
	}
	return Permission{s}, nil
}

// MustParsePermission is ParsePermission for a permission the program itself spells: it
// panics when s is no Permission.
func MustParsePermission(s string) Permission { return must(ParsePermission(s)) }

// IsPermissionPrefix reports whether s is one or more dot-separated permission segments (a
// permission, or what a grant pattern such as "fs.*" holds before its ".*"). It allocates
// nothing: a call's decision asks it.
func IsPermissionPrefix(s string) bool {
	for {
		seg, rest, more := strings.Cut(s, ".")
		if !isPermissionSegment(seg) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

func isPermissionSegment(seg string) bool {
	if seg == "" || !isLower(seg[0]) || seg[len(seg)-1] == '-' {
		return false
	}
	for i := 1; i < len(seg); i++ {
		c := seg[i]
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// IsValid reports whether p was made by ParsePermission.
func (p Permission) IsValid() bool { return p.s != "" }

// String returns the permission.
func (p Permission) String() string { return p.s }

// MarshalText implements encoding.TextMarshaler.
func (p Permission) MarshalText() ([]byte, error) { return []byte(p.s), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParsePermission.
func (p *Permission) UnmarshalText(b []byte) error {
	v, err := ParsePermission(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Digest is a content digest: "sha256:" and 64 lowercase hex digits. The zero Digest is invalid.
type Digest struct{ s string }

// ParseDigest parses s as a Digest. Upper-case hex is refused: one digest has one spelling.
func ParseDigest(s string) (Digest, error) {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return Digest{}, syntaxError("digest", `must be "sha256:" and 64 lowercase hex digits`)
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return Digest{}, syntaxError("digest", `must be "sha256:" and 64 lowercase hex digits`)
		}
	}
	return Digest{s}, nil
}

// IsValid reports whether d was made by ParseDigest.
func (d Digest) IsValid() bool { return d.s != "" }

// String returns the digest text.
func (d Digest) String() string { return d.s }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.s), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseDigest.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// DefinitionRef names a versioned capability definition, "transport.ride.request@1.2": a
// dotted name of at least two segments, "@", and a major.minor version. It is the value of a
// capability's implements and extends fields.
type DefinitionRef struct {
	name         string
	major, minor uint32
}

// ParseDefinitionRef parses s as a DefinitionRef.
func ParseDefinitionRef(s string) (DefinitionRef, error) {
	name, ver, ok := strings.Cut(s, "@")
	if !ok {
		return DefinitionRef{}, syntaxError("definition reference", "must be name@major.minor")
	}
	if _, err := ParsePermission(name); err != nil {
		return DefinitionRef{}, syntaxError("definition reference", "name must be a dotted name of at least two segments")
	}
	mv, err := ParseMinorVersion(ver)
	if err != nil {
		return DefinitionRef{}, syntaxError("definition reference", "version must be major.minor")
	}
	return DefinitionRef{name: name, major: mv.Major, minor: mv.Minor}, nil
}

// Name returns the definition's name.
func (r DefinitionRef) Name() string { return r.name }

// Version returns the definition's major.minor version.
func (r DefinitionRef) Version() MinorVersion { return MinorVersion{Major: r.major, Minor: r.minor} }

// String returns name@major.minor.
func (r DefinitionRef) String() string {
	if r.name == "" {
		return ""
	}
	return r.name + "@" + r.Version().String()
}
