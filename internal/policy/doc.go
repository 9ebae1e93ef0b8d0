// Package policy decides one call: allow, ask, hand off or deny, as a value.
//
// [Decide] is a pure function of the facts the broker gathered about a call ([Call]): which
// capability it names and whether that capability may run at all, what the token says, what
// schema validation found, who the client is, what the token's constraints said, what the
// person's mandate is and whether the person already answered a consent request for this very
// call. It does no I/O and reads no clock; every time it needs is in its input. It follows the
// steps of "Deciding a call" in DESIGN.md in their order, and the first step that refuses ends
// the decision, so the error code a caller sees is that of the earliest thing wrong.
//
// A "no" is a [Decision], never an error: error is for faults, and Decide has none. The zero
// Decision is a deny, and so is every Call that leaves out a fact Decide needs: a zero Call is
// refused at step 1, and a token whose constraints were not reported as checked is refused at
// step 5.
//
// [NeedsConsentToIssue] is the rule for issuing tokens: which grants need the person's consent
// before a token covering them is signed.
//
// Explanations and traces are for people and agents to read. They name capability ids,
// permissions, field paths and rules, and never a token, a key, a param value, or any other
// free text of the input: names that do not parse as what they claim to be are replaced by a
// placeholder.
package policy
