// Package desktop is Tier 2 from the accessibility tree: a running desktop app with no
// manifest gets capabilities derived from what AT-SPI2 says of it over D-Bus, and they are
// invoked through the accessibility interfaces (Action, EditableText, Text), never by
// synthesizing input on the screen.
//
// Bus connects to the accessibility bus (org.a11y.Bus.GetAddress on the session bus) and
// lists the apps registered with the registry; Walk reads an app's tree, bounded in depth,
// count and time; Derive turns a tree into a Tier 2 manifest, each capability addressed by a
// stable path of roles and names (not screen coordinates); Handler invokes them, resolving
// the path again before each call and refusing an element that moved or vanished. What an
// app's tree says (names, descriptions) is the app's word: untrusted, and labelled so.
package desktop
