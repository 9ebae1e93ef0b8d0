// Package intent checks the intents a capability declares — the network destinations,
// sandbox paths, credentials and environments it may use — lexically and against what the
// host knows.
//
// An intent is a statement by an untrusted plugin, never a permission. The checks here are
// necessary, not sufficient: a network host that passes is still resolved by the egress proxy
// at request time, which refuses the same address ranges whatever the name resolves to, and a
// path that passes is still opened beneath the sandbox root at run time. What this package
// guarantees is that nothing a manifest declares names a forbidden destination or a place
// outside the sandbox in any textual form: numeric spellings of IPv4 addresses
// ("2852039166", "0xa9fea9fe", "127.1"), non-canonical IPv6 literals, addresses that embed
// IPv4, special-use domain names, cloud instance endpoints, "..", Unicode look-alikes and
// bidirectional controls are all refused. Input is rejected, never repaired: nothing is
// cleaned, lowercased or normalised and then accepted.
//
// The single-value checks ([HostRule], [PortRule], [PathRule], [CredentialRule],
// [EnvironmentRule], and [AddrRule], which the egress proxy applies to every address a name
// resolves to) return "" or the rule broken; [Check] walks a whole manifest and returns
// every problem with an index-based field path such as
// capabilities[3].network_intents[0].host. No rule ever contains the offending value:
// manifests are untrusted input, shown in terminals and logs.
//
// The zero [Host] is the strictest: sandbox root "/sandbox", no private destination allowed.
// A nil credential catalog or environment list means "not known here" (a developer linting
// a manifest), and only the grammar is checked.
//
// Every function is safe for concurrent use and never panics, whatever the input.
package intent
