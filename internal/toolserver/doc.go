// Package toolserver puts third-party MCP servers behind capgate as Tier 2 apps: capgate is
// their MCP client, derives a manifest from their tools/list, pins every accepted tool by
// hash, and offers the pinned tools through an sdk.Handler, so that they go through the
// broker's checks, consent and audit like any other capability.
//
// A tool server is a Config: a name, either a command that capgate starts and speaks to over
// stdio or a streamable HTTP URL, and the names of the environment variables the operator
// lets through. The child never inherits capgate's environment: it gets PATH, HOME and LANG
// and the listed variables only, and no client key, token or CAPGATE_ variable ever
// reaches it (over stdio or HTTP, capgate sends no credential of its own).
//
// The app. A tool server NAME is the app mcp.NAME (alias NAME), Tier 2 (never signed). Each
// accepted tool is one capability tool.mcp.NAME.ACTION, ACTION derived from the tool's name
// (lowercase, [a-z][a-z0-9_]*, a collision gets _2, _3, ... in the order the tools were
// accepted). Its parameters schema is the tool's inputSchema (JSON Schema 2020-12 unless it
// names another dialect, as MCP says; a tool whose schema does not compile is left out and
// reported); its result is the tool's output wrapped and labelled untrusted (Labelled); its
// description is the tool's, delimited and labelled as untrusted data. Annotations are
// untrusted too: a readOnlyHint never lowers anything. Until the operator classifies a tool
// in the overlay file DATA/toolservers/NAME.overlay.json (OverlayFile), its side effects are
// the worst case, system, and so every call of it needs the person's consent. Its params are
// unclassified, whatever formats the server puts in its schema, until the overlay says which
// are paths, commands and text (Class.Params, classify.go): until then a token with path or
// command constraints refuses the tool.
//
// Pins. Accepting a tool (`capgate toolserver add` accepts every tool it finds, `capgate
// toolserver accept` the changed and new ones) stores its Pin: the sha256 of the RFC 8785
// canonical form of its name, title, description, inputSchema, outputSchema and
// annotations (Hash). The running gateway lists the tools at connect, on every
// notifications/tools/list_changed, and every Options.Relist; a tool whose hash no longer
// matches its pin is stopped at once (the registry reports it unpinned, so the broker
// answers METHOD_NOT_FOUND and the fronts no longer list it; the Handler refuses it too), an
// audit record is written, and a consent request of kind KindPin is opened showing the
// difference. Approving that request, or `capgate toolserver accept`, pins the tool again.
// A renamed tool is a new tool, callable only once accepted; a removed tool leaves the
// manifest and loses its pin.
//
// Revisions. capgate speaks MCP 2026-07-28 to a server that does (the go-sdk client
// discovers it with server/discover: no handshake, every request carrying its revision and
// capgate's capabilities, list changes through subscriptions/listen) and falls back to the
// initialize handshake at the newest older revision the server takes (Revisions). Every
// connection records the revision it spoke (Revision, LoadRevision), which the CLI and the
// apps page show. Nothing above the session depends on the revision: the same listing, the
// same hashes, the same stops.
//
// Information requests. A server may ask for information: under 2026-07-28 as input
// requests in a tools/call result, which the go-sdk client answers and retries the call with;
// under the older revisions as elicitation/create. Both reach one handler: a URL request
// goes to the person as a consent request of kind KindURL, showing the URL as sent (never
// opened), and its answer is the person's (approve: accept, deny: decline, unanswered: cancel);
// a form request that asks for a password, a token, a secret, an API key or payment details,
// by a field's name or format in English or Turkish, is declined and flagged as such
// (ReasonFormSecret, in the answer's _meta, ReasonMeta); any other form of a call goes to the
// person as a consent request of kind KindForm, shown as a form on the approval page, with
// only the person's low-sensitivity profile filled in, and only for a server the person
// granted it to (package profile); a form every field of which the granted profile fills is
// answered with it at once. The person's answer is what the server gets (approve: accept with
// exactly what they entered, deny: decline, unanswered: cancel).
// Each answer is audited (action toolserver.input) and said in a failed call's error.
//
// Pins, pending pin requests, the last revision and each server's Config are kept in the
// store's per-app state of the tool server's app (keys StateConfig, statePin+tool,
// statePending+tool, stateRevision), so that the CLI and a running gateway share them.
package toolserver
