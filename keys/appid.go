package keys

import "github.com/capgate/capgate/manifest"

// ValidAppID reports whether s is a reverse-DNS app id that is safe to use as
// part of a file name: at least two dot-separated labels, each made of
// lowercase ASCII letters, digits and hyphens, starting with a letter and
// ending with a letter or digit, and at most 253 bytes in all.
//
// The rule is what keeps an id from naming a file outside its folder: it
// rules out "", ".", "..", "/", "\", uppercase (which would alias on
// case-insensitive file systems), and empty labels. The empty string is not
// valid.
func ValidAppID(s string) bool {
	_, err := manifest.ParseAppID(s)
	return err == nil
}
