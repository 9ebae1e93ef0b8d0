package manifest

import (
	"cmp"
	"strconv"
	"strings"
)

// Version is a SemVer 2.0.0 version, the version of an app or plugin: MAJOR.MINOR.PATCH with
// an optional pre-release and build metadata. The zero Version is invalid.
type Version struct {
	major, minor, patch uint64
	pre                 string // without the leading "-"
	build               string // without the leading "+"
	ok                  bool
}

// ParseVersion parses s as a SemVer 2.0.0 version. Leading zeros in numeric parts are refused,
// as SemVer requires.
func ParseVersion(s string) (Version, error) {
	const rule = "must be a SemVer 2.0.0 version such as 1.4.0"
	if len(s) > MaxVersionBytes {
		return Version{}, syntaxError("version", "too long")
	}
	rest, build, hasBuild := strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, syntaxError("version", rule)
	}
	var nums [3]uint64
	for i, p := range parts {
		n, ok := semverNumber(p)
		if !ok {
			return Version{}, syntaxError("version", rule)
		}
		nums[i] = n
	}
	if hasPre && !semverIdents(pre, true) {
		return Version{}, syntaxError("version", "pre-release must be dot-separated identifiers of [0-9A-Za-z-] without leading zeros in numbers")
	}
	if hasBuild && !semverIdents(build, false) {
		return Version{}, syntaxError("version", "build metadata must be dot-separated identifiers of [0-9A-Za-z-]")
	}
	return Version{major: nums[0], minor: nums[1], patch: nums[2], pre: pre, build: build, ok: true}, nil
}

// semverNumber parses a numeric identifier: 0 or a digit string without a leading zero.
func semverNumber(p string) (uint64, bool) {
	if p == "" || (len(p) > 1 && p[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(p); i++ {
		if !isDigit(p[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(p, 10, 64)
	return n, err == nil
}

func semverIdents(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case isDigit(c):
			case isLower(c) || ('A' <= c && c <= 'Z') || c == '-':
				numeric = false
			default:
				return false
			}
		}
		if pre && numeric && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// IsValid reports whether v was made by ParseVersion.
func (v Version) IsValid() bool { return v.ok }

// String returns the version text.
func (v Version) String() string {
	if !v.ok {
		return ""
	}
	s := strconv.FormatUint(v.major, 10) + "." + strconv.FormatUint(v.minor, 10) + "." + strconv.FormatUint(v.patch, 10)
	if v.pre != "" {
		s += "-" + v.pre
	}
	if v.build != "" {
		s += "+" + v.build
	}
	return s
}

// Major returns the major version.
func (v Version) Major() uint64 { return v.major }

// Compare orders versions by SemVer precedence: -1, 0 or +1. Build metadata does not count, so
// 1.0.0+a and 1.0.0+b compare equal; a pre-release sorts before its release.
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.major, w.major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.minor, w.minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.patch, w.patch); c != 0 {
		return c
	}
	switch {
	case v.pre == w.pre:
		return 0
	case v.pre == "":
		return 1
	case w.pre == "":
		return -1
	}
	a, b := strings.Split(v.pre, "."), strings.Split(w.pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		an, aNum := semverNumber(a[i])
		bn, bNum := semverNumber(b[i])
		switch {
		case aNum && bNum:
			if c := cmp.Compare(an, bn); c != 0 {
				return c
			}
		case aNum:
			return -1
		case bNum:
			return 1
		default:
			if c := strings.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(a), len(b))
}

// MarshalText implements encoding.TextMarshaler.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseVersion.
func (v *Version) UnmarshalText(b []byte) error {
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// MinorVersion is a major.minor version, the form of manifest_version, a capability's version
// and a definition reference's version ("1.0"). The manifest document's pattern is
// ^\d+\.\d+$; each part must also fit in 32 bits.
type MinorVersion struct{ Major, Minor uint32 }

// ParseMinorVersion parses s as major.minor.
func ParseMinorVersion(s string) (MinorVersion, error) {
	a, b, ok := strings.Cut(s, ".")
	if !ok {
		return MinorVersion{}, syntaxError("version", `must match ^\d+\.\d+$`)
	}
	x, okA := digits32(a)
	y, okB := digits32(b)
	if !okA || !okB {
		return MinorVersion{}, syntaxError("version", `must match ^\d+\.\d+$ with parts below 2^32`)
	}
	return MinorVersion{Major: x, Minor: y}, nil
}

func digits32(s string) (uint32, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

// String returns major.minor.
func (v MinorVersion) String() string {
	return strconv.FormatUint(uint64(v.Major), 10) + "." + strconv.FormatUint(uint64(v.Minor), 10)
}
