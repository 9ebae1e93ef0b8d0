// Package delta says what changed between the locked manifest of an app and a new one, and
// whether the change widens what the app may do. It is the review behind
// `capgate manifest diff OLD NEW` and behind plugin upgrades: an upgrade that quietly asks for
// more must become a reviewed event, never a silent one.
//
// Diff compares two manifests field by field, capabilities matched by id, and sorts each
// difference into a widening (it needs the operator's approval) or a narrowing (everything
// else), following the plugin document's "Permissions delta and widening" list with the
// capgate additions named in each change's text. It rejects an upgrade whose version, digest
// or declared permissions delta does not fit the locked manifest. Recompute is the host's own
// permissions delta, which a declared one must equal.
//
// Change texts are meant for a terminal: every string taken from a manifest is quoted with
// strconv.Quote, so a hostile description or host cannot carry control characters to the
// reader, and free text such as descriptions is reported as changed without being printed.
package delta
