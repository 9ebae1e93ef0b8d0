// Package manifest is the capability manifest of capgate: the model, its strict parser, its
// validation, its canonical form and its Ed25519 signature.
//
// An app declares what it can do in a manifest, one JSON document. YAML is an authoring form
// only: ReadAuthoringFile and ParseYAML read it to lint and sign, and Sign writes the JSON
// that everything else (Parse, ReadFile, VerifyBytes) takes. The manifest is signed with the
// developer's Ed25519 key over its RFC 8785 canonical form with the signature member removed,
// so any correct implementation of that recipe signs and verifies the same bytes, and members
// capgate does not know are signed too. A manifest whose signature verifies against the trusted
// key of its app_id is Tier 1; anything else stays usable at Tier 2, with the reason.
//
// Quick start, signing and verifying from Go:
//
//	doc, err := manifest.ReadAuthoringFile("manifest.yaml")
//	if err != nil {
//		return err // not YAML: the error names where
//	}
//	if ps := doc.Validate(); len(ps) > 0 {
//		return ps // every problem, each a field path and a rule
//	}
//	signed, err := manifest.Sign(doc, privateKey)
//	...
//	doc, _ = manifest.Parse(signed)
//	v := manifest.Verify(doc, keys.TrustStore{Dir: "/etc/portal/keys/trusted"})
//	if !v.Trusted() {
//		log.Printf("%s stays at Tier 2: %s", v.AppID, v.Reason)
//	}
//
// A capability's parameters schema also says which of its params are paths, commands and text
// (ParamClass, by "format"), so that token constraints reach every path and command a call
// carries: Schema.Classes says whether every param is classified, and finds each one in a
// value.
//
// Parsing is strict: duplicate member names, member names that differ from a known field only
// by case, invalid UTF-8, lone surrogates, and numbers that are not finite or do not read back
// exactly as IEEE 754 doubles are refused. Problems name an index-based field path
// ("capabilities[3].parameters") and the rule broken, never the offending value.
package manifest
