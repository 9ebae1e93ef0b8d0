package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// systemRoots are the top-level folders of the system's programs and libraries. Each is bound
// read-only when it is a folder, or made the same symbolic link when it is one (on a
// merged-/usr system /bin is a link to usr/bin).
var systemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemEtc are the files and folders of /etc that programs read to start and run, bound
// read-only when they exist. The rest of /etc stays out: it holds the host's secrets
// (shadow, ssh host keys, sudoers, credentials of services) and nothing a command needs.
var systemEtc = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", // the dynamic loader
	"/etc/alternatives",                               // Debian's program links (awk, editor, ...)
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", // names of users and groups, for ls -l and id
	"/etc/localtime", "/etc/timezone", // the time zone
	"/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale",
	"/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki/tls/certs", // trust anchors (for the egress proxy to come)
	"/etc/mime.types", "/etc/magic", "/etc/magic.mime", // file and friends
	"/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/etc/inputrc", "/etc/profile", "/etc/bash.bashrc",
	"/etc/perl", "/etc/python3", // interpreters' site configuration
}

// systemView returns bwrap's arguments for the system's read-only view, read from this
// machine once, and the paths it binds (for Landlock, which allows the same).
func systemView() (args, bound []string) {
	for _, p := range systemRoots {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, p)
			continue
		}
		if fi.IsDir() {
			args, bound = append(args, "--ro-bind", p, p), append(bound, p)
		}
	}
	for _, p := range systemEtc {
		if _, err := os.Lstat(p); err == nil {
			args, bound = append(args, "--ro-bind", p, p), append(bound, p)
		}
	}
	// Python versions keep their site configuration in /etc/python3.N.
	if ms, err := filepath.Glob("/etc/python3.*"); err == nil {
		for _, p := range ms {
			args, bound = append(args, "--ro-bind", p, p), append(bound, p)
		}
	}
	return args, bound
}

// visible reports whether p lies in the system's view or under one of roots: only there can a
// Hidden path be seen, and need covering.
func visible(p string, roots []string) bool {
	for _, r := range append(append([]string(nil), roots...), systemVisible...) {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// systemVisible are the folders of the system's view under which a path can be seen.
var systemVisible = append(append([]string(nil), systemRoots...), systemEtc...)
