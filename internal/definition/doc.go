// Package definition is capabilities by meaning: the definition record of the definitions
// document, independent of the app that provides it, read strictly from a signed file.
//
// A definition is named in reverse-DNS under one root (capgate's own is Root, org.capgate;
// a host may configure another) and versioned major.minor. A definition outside the root is a
// third party's extension: it lives in its own namespace and extends another definition. Its
// input and output are JSON Schema 2020-12, and the lint (SecretFields) refuses any field that
// would carry a password, a token, a secret, an API key or payment card details, by name or by
// format, at any depth.
//
// A definition file is JSON (or the YAML authoring form), signed like a manifest: Ed25519 over
// the RFC 8785 canonical form of the document with its signature member removed. The key is
// the namespace's: the first two labels of the name (org.capgate, com.example), looked up in a
// key source such as keys.TrustStore.
//
// Problems name a field path and the rule broken, never the offending value: a definition is
// untrusted input until its signature is checked, and shown in terminals and logs.
package definition
