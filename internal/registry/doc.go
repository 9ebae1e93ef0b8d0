// Package registry is the set of apps capgate knows and their capabilities, indexed for the
// way of one call: by capability id, by IPC address (app alias or id and method), by
// permission, and by the grants of a token.
//
// The store (store.Apps) is the truth. Every write goes to the store first; only when the
// store accepted it does the registry publish a new in-memory snapshot, built whole and
// swapped in one atomic step, so that a reader sees either the index before a write or the
// index after it, never a half-updated one, and never waits for a writer. Writes are
// serialized inside one Registry; several replicas sharing one store see each other's writes
// after Reload.
//
// Every manifest is verified when it is registered and again whenever the registry loads
// from the store (New, Reload), against the trusted keys of that moment: a manifest that
// verifies is Tier 1, anything else is Tier 2 with the reason, and stays usable as such. A
// stored manifest that no longer parses or no longer passes the format's rules is skipped
// and reported by Skipped, never indexed.
//
// Lookups are exact: no case folding, no trimming. A disabled app's capabilities are hidden
// from every lookup that resolves a call (Capability, Method, ByPermission, Covered); App,
// List and RiskOf still see them.
package registry
