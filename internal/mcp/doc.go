// Package mcp is capgate's Model Context Protocol front: capgate as the one MCP server an
// agent connects to, beside the IPC API (internal/ipc). Each authenticated client gets its own
// MCP session (under 2026-07-28, a server per request) whose tools/list holds only the
// capabilities that client may use (the rule of broker.UsableBy, which the IPC API's
// /v1/capabilities shares), and whose tools/call runs through broker.Broker.Call: the same
// pipeline, decisions and audit records as the IPC API.
//
// Serving: [NewHandler] is streamable HTTP (capgate serve mounts it at /mcp; the client key is
// the bearer token, and a request without a known key is 401). [Forward] is the stdio face of
// `capgate mcp`: an MCP client of a running gateway's /mcp that re-serves the same tools over
// stdin and stdout, so that every rule lives in one place; it serves the same revisions, and
// passes a 2026-07-28 client's calls, input requests and answers through under 2026-07-28.
//
// Tools. A capability is the tool alias + "__" + method ("calc__compute"), with the
// capability's parameters schema as its inputSchema, its returns schema as its outputSchema
// when that is an object schema, annotations derived from the signed declaration (side
// effects, idempotency, reversibility; never from the app's words), and a description that
// labels the app's own text as data between <app-description> delimiters. Five tools are
// capgate's own: capgate__request_capability, capgate__undo, capgate__explain,
// capgate__negotiate (the definitions a client supports, intersected with the host's) and
// capgate__find_capabilities (the few candidates of a task, internal/plan).
//
// Tokens. An MCP client cannot be expected to carry capgate's capability tokens through its
// model, and a token in a tool argument would pass through the model's context, where it can
// leak into prompts, logs and other tools. So the token never leaves the gateway: the tokens
// issued through capgate__request_capability are held for the client in the store
// (store.Holdings), where every replica and every session of that client finds them, and the
// tool answers with the token's id, its expiry and a handle ("cgh_" and 32 hex digits), never
// its wire form. A call uses the narrowest held token that covers the capability's permission
// and whose constraints admit the params, or the one whose handle it names in its _meta
// ([HandleMeta], "capgate/token_handle"). A handle proves nothing: it is taken only from the
// client it was issued to, authenticated by its own key; presented with another client's key
// it is refused as unknown, and the attempt is audited. Up to [MaxHeldTokens] are held per
// client; a token that is used up, expired or revoked is forgotten at its next refusal.
//
// Refusals. A call that is refused, fails, or waits for the person is a tool result with
// isError set and the error code, explanation and (for consent) the request's id and approval
// URL path /ui/requests/ID, never a JSON-RPC error, so that the model sees why.
//
// Consent. A call or token request that needs the person's consent creates the consent
// request and, under the handshake revisions, waits for its answer as over the IPC API; when
// the client declares URL-mode elicitation, capgate also sends a URL elicitation pointing to
// its own approval page at once. Under 2026-07-28, where a server sends no requests of its
// own, a client that declares URL-mode elicitation gets an input request instead (the same
// URL elicitation, under [ConsentInput], with a requestState naming the consent request) at
// once, and asks again with its answer: after "accept" the call waits for the person, and
// completes once they answered on the page (or comes back with the input request again while
// they have not); after "decline" or "cancel" it does not wait. The requestState proves
// nothing: the broker takes only this client's request for this very call or these grants
// and terms, and one approval runs one call or issues one token, on any replica. Either way
// the client's answer (accept, decline, cancel) says only whether the person went to the
// page: it is reported in the result as such and is never recorded as consent, which only
// the approval surface gives. A 2026-07-28 client without URL-mode elicitation waits, as
// under the older revisions.
//
// Protocol versions ([ServedVersions]). 2026-07-28 is served without sessions: a request
// whose MCP-Protocol-Version header says 2026-07-28 (or whose body carries that revision's
// per-request _meta) gets a server of its own, built for its client, which answers
// server/discover, checks _meta against the MCP-Protocol-Version, Mcp-Method and Mcp-Name
// headers (a mismatch is HTTP 400 with -32020), ignores an inbound Mcp-Session-Id, refuses GET
// and DELETE with 405, and gives list results cache hints: tools/list is private to the
// client and fresh for [ToolsListTTL], and a client that listens (subscriptions/listen) is
// told at once when its tools change (its trust or settings, the registry). The revision's
// hot request, a tools/call of a capability in its plain shape, is answered without building
// the SDK's session for it (fast.go): the same tool handler, the SDK's answer byte for byte,
// every other request and every doubt left to the SDK. Every other
// request goes to the sessions of the handshake revisions (2025-11-25, 2025-06-18,
// 2025-03-26), which keep working as they did; sessions need a sticky route to their
// replica, 2026-07-28 needs none.
package mcp
