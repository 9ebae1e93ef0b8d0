// Package port is the host's own copy of the port descriptors it supports, and the floors they
// put on the capabilities of a plugin.
//
// A port is a versioned set of methods, such as knowledge.v1 with search and fetch. The host
// keeps its own descriptor of every port it supports, in a folder (see LoadDir); a plugin's
// manifest names the ports it implements in its top-level ports, and each capability names the
// method it serves in implements ("knowledge.search@1.0"). Check holds every such capability
// to the host's copy of the method: a provider can claim more caution than the port requires
// (a higher risk, a worse side effect, more evidence, no idempotency, no dry run), never less.
// The plugin's own copy of a port, if it ships one, is never read: a floor the plugin could
// edit would be no floor.
//
// The folder also holds the kit index, the conformance suites the host can run. A capability's
// conformance_suite is looked up in it by name and never opened as a path: Suite matches the
// name against the index first, and only then reads the suite's data, a file of the folder's
// conformance/ subfolder (see Suite for the format). internal/conformance runs it.
//
// Problems name an index-based field path of the manifest and the rule broken, never the
// offending value; errors from LoadDir name the file and the field.
package port
