// Package token is capgate's signed capability token and every check of it that needs no
// storage.
//
// A token is a bounded grant of permissions to one client: it names the permissions it grants
// (exact ones such as fs.read, or patterns such as fs.*), when it was issued and when it
// expires, how many times it may be used, the constraints on its params (allowed paths,
// allowed and denied commands, a CEL condition), and the consent that approved it. capgate
// signs the RFC 8785 canonical form of the token without its signature with its own Ed25519
// key and hands the agent the wire form, "cgt1." followed by the unpadded base64url of the
// canonical JSON of the whole token.
//
// The package answers the questions about one call that the token alone can answer:
//
//   - is the wire form a token capgate signed ([Parse], [Verifier.Verify]);
//   - is it within its time ([Token.CheckTime]) and bound to this client ([Token.CheckClient]);
//   - does it cover the permission ([Covers]);
//   - do its constraints allow these params ([Constraints.Check]);
//   - is a derived token strictly narrower than its parent ([Derive]), and is a token fit to
//     be issued at all ([Validate]).
//
// Use counts and revocations are not here: they live in the store (store.Tokens), so that a
// token is never used more than max_uses times on one replica or many. A token that passes
// every check here must still take a use from the store before the call runs.
//
// Errors are sentinels tested with errors.Is, wrapped with the field or rule at fault; they
// never contain the token, its signature, or the value a constraint refused.
package token
