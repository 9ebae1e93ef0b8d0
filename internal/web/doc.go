// Package web is capgate's approval page: the person's own surface, served by `capgate serve`
// under /ui/, where they see what agents ask in their name and answer. No agent and no tool
// server can draw on it.
//
// It holds the pending consent requests (/ui/ and /ui/requests, one request at
// /ui/requests/ID, the link the IPC and MCP answers give) with approve, deny and, for a
// delayed commit, cancel; the live tokens (/ui/tokens) with revoke, which revokes the tokens
// derived from one too, and never a token's wire form or hash; the person's mandates
// (/ui/mandates), one autonomy per permission the enabled capabilities declare, never above
// their ceiling; the apps (/ui/apps): every registered app with its tier and why, each tool
// server with its pinned tools and the changed or new tools it stopped, each with its
// difference and "accept the new definition" (toolserver.AcceptSeen, as `capgate toolserver
// accept` pins, and only the definition the page showed) or "keep it stopped" (its pin request
// denied), and the plugins under the lockfile with the widenings pending and their
// differences, each approved only as shown (plugin.Host.ApproveSeen); and the audit log
// (/ui/activity), newest first, filtered by client, app, decision and time, with what
// audit.Verify finds said plainly at the top (run again only when the log's head or its
// checkpoints changed), and an "undo" on each call whose undo window is still open, which
// goes through the broker as an agent's undo does (broker.Broker.UndoCall).
//
// The person's changes that no other part records (revoking a token, accepting a tool,
// keeping one stopped, approving a widening) are written to the audit log under the client
// "person (approval page)", before they are made; an accept or an approval whose record
// cannot be written is not made.
//
// The page guards itself:
//   - it answers only under a loopback Host (localhost, 127.0.0.0/8, [::1], any port) or
//     one the operator allowed (Options.AllowedHosts), and refuses every other with 421
//     before any page runs, so that a web site rebinding its name to the gateway's address
//     (DNS rebinding) reaches nothing;
//   - it is reached through a one-time login link ([Server.LoginLink], printed by `capgate
//     serve`) that sets a session cookie (HttpOnly, SameSite=Strict, Path=/ui/, Secure over
//     TLS); every other page answers 401 without a session;
//   - every change is a POST carrying the session's CSRF token (compared in constant time),
//     and a cross-origin browser request is refused (http.CrossOriginProtection);
//   - every answer carries a strict Content-Security-Policy (no inline script or style, no
//     framing), nosniff, no referrer and no caching;
//   - whatever an agent, an app, a tool server or a plugin wrote is rendered as text by
//     html/template, never as markup, with control, bidirectional and invisible characters
//     (consent.Invisible) shown as escapes; a form names a tool by its pin request, never by
//     the server's text; a URL in params is shown with its host highlighted, and is never a
//     link and never fetched; look-alike characters (consent.Lookalikes, capgate's one
//     check) are flagged in every host and in every text of a request an agent, an app or a
//     tool server supplied, each named by its field.
//
// A request says what approving it means in consent.Describe's words, as `capgate approvals`
// does: a token request its uses, lifetime and expiry, constraints and that it is revocable;
// a call whether and for how long it can be undone (a read has nothing to undo); a pin
// request the tool's difference, line by line. Every duration is consent.ShowDuration's,
// and assets/app.js says them the same way.
//
// The pages are server-rendered and work without JavaScript; a little plain JavaScript
// (assets/app.js, building DOM with textContent only) polls /ui/requests.json so that new
// requests appear without a reload, and counts down the time left.
package web
