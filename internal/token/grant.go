package token

import (
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Covers reports whether grants cover permission: a grant equal to it, or a pattern "p.*"
// whose prefix p is followed in permission by a dot ("fs.*" covers fs.read and fs.read.x,
// not fsx.read nor fs). Matching is exact and case-sensitive. A permission that
// manifest.ParsePermission refuses is never covered, and a grant that is neither a
// permission nor a well-formed pattern covers nothing (so "*", ".*", "fs.*.*" and "FS.*"
// grant nothing).
func Covers(grants []string, permission string) bool {
	p, err := manifest.ParsePermission(permission)
	if err != nil {
		return false
	}
	return CoversPermission(grants, p)
}

// CoversPermission is Covers for a permission already parsed: grants cover p when one is
// p or a pattern whose prefix p continues with a dot. The zero Permission is never covered.
func CoversPermission(grants []string, p manifest.Permission) bool {
	if !p.IsValid() {
		return false
	}
	ps := p.String()
	for _, g := range grants {
		if coversOne(g, ps) {
			return true
		}
	}
	return false
}

// coversOne reports whether grant g covers the valid permission p.
func coversOne(g, p string) bool {
	if prefix, ok := strings.CutSuffix(g, ".*"); ok {
		return validPattern(prefix) && len(p) > len(prefix) && p[len(prefix)] == '.' && strings.HasPrefix(p, prefix)
	}
	return g == p
}

// validGrant reports whether g is a permission or a pattern: one or more permission segments
// followed by ".*".
func validGrant(g string) bool {
	if prefix, ok := strings.CutSuffix(g, ".*"); ok {
		return validPattern(prefix)
	}
	_, err := manifest.ParsePermission(g)
	return err == nil
}

// validPattern reports whether prefix, the part of a pattern before ".*", is one or more
// permission segments.
func validPattern(prefix string) bool {
	if prefix == "" || len(prefix)+2 > manifest.MaxCapabilityIDBytes {
		return false
	}
	return manifest.IsPermissionPrefix(prefix)
}

// grantWithin reports whether every permission child covers is covered by parent; both are
// valid grants.
func grantWithin(child, parent string) bool {
	if cp, ok := strings.CutSuffix(child, ".*"); ok {
		pp, ok := strings.CutSuffix(parent, ".*")
		return ok && (cp == pp || strings.HasPrefix(cp, pp+"."))
	}
	return coversOne(parent, child)
}
