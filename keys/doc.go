// Package keys reads and writes the Ed25519 key files that sign and verify
// capgate manifests, and reads the trusted-keys folder that says which public
// keys an app's manifest may be signed with.
//
// Two kinds of file live on disk:
//
//   - A developer's private key: exactly 32 raw bytes (the Ed25519 seed), by
//     default at ~/.config/portal-{app_id}/ed25519.key, in a folder of mode
//     0700 and a file of mode 0600. [LoadPrivateKey] refuses a file that group
//     or others may read or write, a symlink, and anything but 32 bytes.
//   - A public key: 32 raw bytes, or the standard padded base64 of those 32
//     bytes with optional trailing whitespace. [ParsePublicKey] accepts both;
//     raw wins when a file is exactly 32 bytes long.
//
// A [TrustStore] maps an app id to its trusted keys: {dir}/{app_id}.pub plus
// every {dir}/{app_id}.d/*.pub. The extra folder exists for key rotation: an
// operator drops the new key in before the re-signed manifest ships, so both
// the old and the new signature verify during the overlap, and deletes the old
// file to end its trust.
//
// Every app id is checked with [ValidAppID] before it becomes part of a path,
// so an id can never name a file outside the folder it belongs in.
//
// Errors name the file and the rule that was broken and wrap a sentinel
// (ErrMalformedKey, ErrInsecurePermissions, ...) for errors.Is; they never
// contain key bytes or file contents.
package keys
