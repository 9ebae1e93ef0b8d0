// Package egress is capgate's egress proxy: the only network a sandboxed provider or tool
// server can reach. capgate serves it on a unix socket per sandbox, which a shim inside the
// sandbox exposes as HTTP_PROXY and HTTPS_PROXY; this package sees only a net.Listener.
//
// It speaks HTTP CONNECT (a tunnel: the client's TLS passes through) and plain HTTP
// forwarding (GET http://host/path). Every request carries the proxy credential of one
// capability call in flight (Proxy-Authorization: Basic, user "capgate", the credential Open
// returned as password), so every connection is attributed to exactly one call; a request
// without a valid one is answered 407.
//
// For each connection the proxy, in this order:
//
//  1. reads the destination (host, port) and normalises its spelling (see HostPort);
//  2. checks the host by capgate's own network-intent rules (intent.HostRule), so a numeric
//     or IPv6-mapped spelling of loopback, a metadata address or a special-use name is
//     refused with the rule it breaks;
//  3. refuses every connection of a dry run, which may do nothing above read;
//  4. requires the destination to be one of the call's declared destinations, exactly;
//  5. resolves a name once, through the configured Resolver, and classifies every address of
//     the answer with capgate's special-purpose table (intent.AddrRule: the IANA IPv4 and
//     IPv6 special-purpose registries, loopback, link-local, multicast, unspecified, cloud
//     metadata, every IPv6 form embedding IPv4; never Go's IsPrivate or IsGlobalUnicast,
//     which call 192.0.0.0/24, 198.18.0.0/15, 240.0.0.0/4 and 2001:db8::/32 public). A
//     private address passes only inside the host policy's AllowPrivate prefixes. If any
//     address of the answer is refused, the connection is refused: a mix of good and
//     special addresses is itself the sign of a hostile or broken zone;
//  6. connects to a checked address (net.Dialer to the netip.AddrPort), never to the name.
//
// A refusal is reported to Options.OnRefusal with the call and the rule (for the audit
// log), and the client gets 403 (400 for a request it could not have meant) with a short
// plain-text body naming the rule and a Proxy-Status header (RFC 9209); the body never
// repeats the client's input, only a destination the proxy has parsed and normalised. Every
// connection made is reported to Options.OnConnect and kept as an observed side effect,
// returned by Observed and by the call's done: capgate holds it against the capability's
// declaration without the provider's word.
//
// Plain HTTP forwarding never follows redirects: the client sees the 3xx, and the request it
// then makes to the new location is a new request, checked from step 1. Upstream connections
// are pooled per call, never shared between calls, and closed when the call ends.
//
// Credentials never enter a sandbox. The host's catalog (Credential) names, for each
// credential intent, where the secret comes from (a file or an environment variable of
// capgate), the destinations it may be sent to, and the header that carries it. Handle
// mints an opaque handle bound to one call and one intent. The provider sends plain HTTP
// through the proxy to http://host/... with the header Capgate-Credential: HANDLE; the proxy
// removes it, checks that the destination is both the intent's and the call's, opens TLS to
// it itself (verifying the certificate against the system's roots or Options.RootCAs), sets
// the secret's header, and forwards the request. The secret is masked wherever the response
// would carry it back (an endpoint that echoes headers), and it appears in no log line,
// error, refusal or response of the proxy.
//
// What the proxy cannot see: a CONNECT tunnel carries the client's own bytes (its TLS), so
// the proxy checks where the connection goes, never the names spoken inside it; a shared
// front (a CDN serving many sites on one address) can be asked inside the tunnel for another
// of its sites. Declare destinations that are not shared fronts, or reach them with a
// credential handle, where the proxy speaks TLS itself and sets the Host header.
//
// Every limit is in limits.go with its reason.
package egress
