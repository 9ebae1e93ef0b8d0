package intent

import (
	"net/netip"
	"path"
	"strings"
)

// DefaultSandboxRoot is the sandbox root of a Host whose SandboxRoot is empty.
const DefaultSandboxRoot = "/sandbox"

// Host is what the host knows that a manifest's intents are checked against. The zero Host
// is the strictest: the sandbox root is DefaultSandboxRoot, no private destination is allowed,
// and credentials and environments are checked by grammar only.
//
// A Host is read, never modified, by the checks; one Host may be shared by goroutines.
type Host struct {
	// SandboxRoot is the directory every filesystem intent must lie in; "" means
	// DefaultSandboxRoot. It must be absolute and clean (path.Clean leaves it unchanged);
	// if it is not, every path is refused, since nothing could be shown to be inside it.
	SandboxRoot string

	// Protected are mounts under the root that no intent may name or lie inside, such as
	// "/sandbox/.capgate". Entries are absolute; a relative entry is read relative to the
	// sandbox root. Containment is compared segment by segment, so "/sandbox/.capgate-x" is
	// not inside "/sandbox/.capgate". An intent on an ancestor of a protected mount (the root
	// itself, say) is not refused here: run-time enforcement keeps protected mounts out of
	// every grant.
	Protected []string

	// AllowPrivate are the private destinations (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
	// fc00::/7) that the host's signed policy allows. It opens nothing else: loopback,
	// link-local, metadata and every other special-purpose range stay refused whatever it
	// holds.
	AllowPrivate []netip.Prefix

	// AllowPrivateNames are the exact DNS names the policy allows to resolve to private
	// addresses. Names are checked lexically only, so this list changes no rule here; it is
	// carried for the egress proxy, which resolves names and checks the addresses.
	AllowPrivateNames []string

	// Credentials is the host's credential catalog: a credential intent must name an entry
	// whose value is true. Nil means the catalog is not known here (a developer linting a
	// manifest), and only the grammar is checked; an empty non-nil map refuses every intent.
	Credentials map[string]bool

	// Environments are the environment names and tags the host knows; nil means not known
	// here, as for Credentials.
	Environments map[string]bool

	// ResolveOnDisk, at install, also resolves symbolic links along every existing prefix of
	// each filesystem intent and refuses a path that leaves the resolved root or enters a
	// protected mount. It reads the file system, so it is a point-in-time check: run-time
	// access must still open paths beneath the root without following links out of it.
	ResolveOnDisk bool
}

// root returns the sandbox root and whether it is usable: absolute and clean.
func (h Host) root() (string, bool) {
	r := h.SandboxRoot
	if r == "" {
		r = DefaultSandboxRoot
	}
	ok := strings.HasPrefix(r, "/") && path.Clean(r) == r && !strings.ContainsAny(r, "\x00\\")
	return r, ok
}

// protected returns the protected mounts as clean absolute paths. The entries are the host's
// own configuration, not manifest input, so cleaning them is safe; it can only make the
// comparison stricter.
func (h Host) protected(root string) []string {
	out := make([]string, 0, len(h.Protected))
	for _, p := range h.Protected {
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			p = root + "/" + p
		}
		out = append(out, path.Clean(p))
	}
	return out
}

// within reports whether p is dir or lies beneath it, comparing whole segments. Both are
// clean absolute paths.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || (strings.HasPrefix(p, dir) && p[len(dir)] == '/')
}
