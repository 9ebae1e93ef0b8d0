// Package jcs parses JSON strictly and writes it in the JSON
// Canonicalization Scheme of RFC 8785.
//
// capgate signs manifests and tokens over their canonical form, so two
// programs that read the same bytes must agree on exactly one canonical
// encoding, or a signature could be made to cover something other than what
// a verifier sees. Parse therefore refuses every input that has no single
// canonical form instead of guessing: duplicate member names, lone
// surrogates, invalid UTF-8, numbers that overflow a double, and anything
// outside the RFC 8259 grammar. With [Options.ExactNumbers] it also refuses
// number literals that carry more precision than a double keeps, so the
// signed text and the value a verifier reads cannot differ.
//
// Every size and depth limit lives in limits.go. Errors are [*SyntaxError]
// values that name the location (a path such as capabilities[3].id and a
// byte offset) and the rule broken, and wrap a sentinel such as
// [ErrDuplicateKey]; they never echo the offending text, which may be a
// secret.
//
// Parse and Canonicalize never panic, whatever the input.
package jcs
