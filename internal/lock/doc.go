// Package lock is capgate's plugin lockfile, capgate.lock in the data folder: for every
// installed plugin the version, the digest the host recomputed, the signer's key fingerprint,
// the tier and the installed manifest in canonical form, plus the widenings awaiting approval.
//
// The lockfile is what the host compares a plugin against at every start and what a
// permissions delta is computed from, so it is read as strictly as a signed document: one
// JSON encoding, no duplicate or unknown members, every entry checked (see File.Validate).
// It is replaced atomically (temporary file, fsync, rename, fsync of the folder), so a crash
// at any instant leaves the old lockfile or the new one, never a torn file; Update serializes
// read-modify-write cycles of several capgate processes with an advisory lock.
//
// Errors name the entry (its app id) and the field, never the offending value.
package lock
