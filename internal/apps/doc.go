// Package apps holds nothing but the rule its subpackages keep: each is a built-in Tier 1 app
// (settings, files, editor, terminal, python, calc, syslog, solitaire) that acts on its own
// data model through the handler SDK, never on a rendered surface. No handler injects script
// into a view, runs a browser's editing commands or drives a UI; TestNoUIAutomation fails the
// build's tests when a handler package imports an API that could.
package apps
