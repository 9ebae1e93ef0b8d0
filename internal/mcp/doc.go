// Package mcp is capgate's Model Context Protocol front: capgate as the one MCP server an
// agent connects to, beside the IPC API (internal/ipc). Each authenticated client gets its own
// MCP session whose tools/list holds only the capabilities that client may use (the rule of
// broker.UsableBy, which the IPC API's /v1/capabilities shares), and whose tools/call runs
// through broker.Broker.Call: the same pipeline, decisions and audit records as the IPC API.
//
// Serving: [NewHandler] is streamable HTTP (capgate serve mounts it at /mcp; the client key is
// the bearer token, and a request without a known key is 401). [Forward] is the stdio face of
// `capgate mcp`: an MCP client of a running gateway's /mcp that re-serves the same tools over
// stdin and stdout, so that every rule lives in one place.
//
// Tools. A capability is the tool alias + "__" + method ("calc__compute"), with the
// capability's parameters schema as its inputSchema, its returns schema as its outputSchema
// when that is an object schema, annotations derived from the signed declaration (side
// effects, idempotency, reversibility; never from the app's words), and a description that
// labels the app's own text as data between <app-description> delimiters. Three tools are
// capgate's own: capgate__request_capability, capgate__undo and capgate__explain.
//
// Tokens. An MCP client cannot be expected to carry capgate's capability tokens through its
// model, and a token in a tool argument would pass through the model's context, where it can
// leak into prompts, logs and other tools. So the token never leaves the gateway: each MCP
// session holds the tokens issued through capgate__request_capability (the tool answers with
// the token's id and expiry, never its wire form), and a call uses the narrowest of them that
// covers the capability's permission and whose constraints admit the params. A token lives
// only as long as its session (and its own expiry); a new session asks again.
//
// Refusals. A call that is refused, fails, or waits for the person is a tool result with
// isError set and the error code, explanation and (for consent) the request's id and approval
// URL path /ui/requests/ID, never a JSON-RPC error, so that the model sees why.
//
// Consent. A call or token request that needs the person's consent creates the consent
// request and waits for its answer as over the IPC API. When the client declares URL-mode
// elicitation, capgate also sends a URL elicitation pointing to its own approval page at
// once. The client's answer (accept, decline, cancel) says only whether the person went
// there: it is reported in the result as such and is never recorded as consent, which only
// the approval surface gives.
//
// Protocol versions. Sessions are stateful (they hold tokens and send elicitations while a
// call waits), so capgate serves the revisions with the initialize handshake, up to
// 2025-11-25; the SDK's client falls back to them on its own. The sessionless 2026-07-28
// revision (input requests instead of server-initiated elicitation) is not served yet.
package mcp
