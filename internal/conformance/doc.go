// Package conformance runs a capability's conformance suite against its provider and keeps
// the outcome as the capability's test status.
//
// A capability's conformance_suite is a claim, and the host never trusts it: Run looks the
// suite up by name in the host's kit index (port.Registry.Suite, never a path the manifest
// could steer), and calls the capability once for each of the suite's cases that names the
// port method it implements. Each case's call must come to what the suite expects: success
// with a result that fits the capability's returns schema, or the error code it names; and no
// reported effect above the case's max_effect, the capability's declared side_effects, or,
// in a dry run, read.
//
// A suite never makes a capability change anything. A capability that declares dry_run is
// called as a dry run (sdk.Report.DryRun set); one without is called only when its declared
// side_effects is none or read. A capability that may write and has no dry run is not run at
// all: its result is StatusNotRun, which is not a pass.
//
// The provider's text is never shown: a failure names the case, a field path (of the suite
// file, of the result, of the reported effects) and the rule, in words of the host's own,
// bounded by MaxReasonBytes. Save and Load keep each app's results in the store, so that the
// plugin list and the approval page can show them.
package conformance
