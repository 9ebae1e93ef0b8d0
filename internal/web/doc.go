// Package web is capgate's approval page: the person's own surface, served by `capgate serve`
// under /ui/, where they see what agents ask in their name and answer. No agent and no tool
// server can draw on it.
//
// It holds the pending consent requests (/ui/ and /ui/requests, one request at
// /ui/requests/ID, the link the IPC and MCP answers give) with approve, deny and, for a
// delayed commit, cancel; the live tokens (/ui/tokens) with revoke, which revokes the tokens
// derived from one too, and never a token's wire form or hash; the person's mandates
// (/ui/mandates), one autonomy per permission the enabled capabilities declare, never above
// their ceiling; and the audit log
// (/ui/activity), newest first, filtered by client, app, decision and time, with what
// audit.Verify finds said plainly at the top. Apps are to come.
//
// The page guards itself:
//   - it is reached through a one-time login link ([Server.LoginLink], printed by `capgate
//     serve`) that sets a session cookie (HttpOnly, SameSite=Strict, Path=/ui/, Secure over
//     TLS); every other page answers 401 without a session;
//   - every change is a POST carrying the session's CSRF token (compared in constant time),
//     and a cross-origin browser request is refused (http.CrossOriginProtection);
//   - every answer carries a strict Content-Security-Policy (no inline script or style, no
//     framing), nosniff, no referrer and no caching;
//   - whatever an agent, an app or a tool server wrote is rendered as text by html/template,
//     never as markup, with control and bidirectional characters shown as escapes; a URL in
//     params is shown with its host highlighted and look-alike characters flagged, and is
//     never a link and never fetched.
//
// The pages are server-rendered and work without JavaScript; a little plain JavaScript
// (assets/app.js, building DOM with textContent only) polls /ui/requests.json so that new
// requests appear without a reload, and counts down the time left.
package web
