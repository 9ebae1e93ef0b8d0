// Package client is the Go client of capgate's IPC API, for agents and agent frameworks
// written in Go: typed methods for every endpoint the gateway serves, over HTTP or over the
// gateway's unix socket, with the client key as a bearer token.
//
//	c, err := client.New(&client.Options{Key: os.Getenv("CAPGATE_CLIENT_KEY")})
//	if err != nil { ... }
//	tok, err := c.RequestCapability(ctx, client.TokenRequest{
//		Capabilities: []string{"system.settings.read"}, Duration: 10 * time.Minute, Reason: "check the theme",
//	})
//	if err != nil { ... }
//	res, err := c.Query(ctx, client.Call{App: "settings", Method: "get_setting",
//		Params: map[string]string{"category": "appearance", "key": "theme"}, Token: tok.Wire})
//	switch {
//	case errors.Is(err, client.ErrConsentRequired):
//		// the person has yet to answer; client.CodeOf, or errors.As with *client.Error, says more
//	case err != nil: ...
//	}
//	var setting struct{ Value string }
//	err = res.Decode(&setting)
//
// The methods and their endpoints: Call and Query (POST /v1/ipc, actions execute and query),
// Undo (POST /v1/ipc, action undo), Explain (POST /v1/explain), Capabilities
// (GET /v1/capabilities), RequestCapability (POST /v1/capabilities/request), Derive
// (POST /v1/tokens/derive), Revoke (POST /v1/tokens/revoke) and Health (GET /healthz).
// docs/openapi.yaml in the repository describes each; the shapes on the wire are package
// wire's, which the gateway itself uses.
//
// Errors are values to test. A refusal or a failure the gateway answers is an *Error with the
// gateway's code, message and, when the person is asked, the consent request; errors.Is
// matches it against ErrConsentRequired, ErrCapabilityDenied and the other sentinels, one per
// code. An answer that is not what the API defines is a *ProtocolError. Anything else is the
// transport's error (a *url.Error from net/http), which wraps context.Canceled or
// context.DeadlineExceeded when the context or Options.Timeout ended the request. No error,
// and no String of a Client or a Token, holds the client key or a token.
//
// A Client is safe for concurrent use, and keeps its connections open between requests.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Options configure a Client. A nil *Options is the zero value: DefaultServer, no key, no
// timeout.
type Options struct {
	// Server is the gateway's URL, http or https, as capgate serve prints it; a path after
	// the host is kept as a prefix of every route (a gateway behind a reverse proxy). It must
	// carry no user info, query or fragment. "" means DefaultServer. Over plain http the key
	// crosses the network as it is: use http only to loopback, or the socket.
	Server string
	// Socket is the path of the gateway's unix socket (capgate serve's DATA/capgate.sock).
	// When set, every request goes over it, Server and HTTPClient must be unset, and a
	// client bound to this process's unix user (capgate client add --uid) needs no Key.
	Socket string
	// Key is the client key capgate client add printed, sent as "Authorization: Bearer KEY"
	// with every request but Health's. It must be a bearer token (RFC 6750: letters, digits,
	// and -._~+/, then any = padding). "" sends none: only a client bound to a uid, over the
	// socket, is then known.
	Key string
	// HTTPClient sends every request over HTTP, as it is configured (its transport, proxy,
	// TLS settings, redirect policy and timeout). nil means a client of the package's own on
	// net/http's default transport, which follows no redirect: the API never redirects, and
	// a request resent elsewhere would carry its capability token with it.
	HTTPClient *http.Client
	// Timeout bounds each request, from sending it to reading the answer's last byte. A
	// token request that needs the person waits for their answer as long as its consent
	// request lives (5 minutes by default), and a call that needs them up to 2 minutes: a
	// Timeout shorter than that gives up first, and ends the request, as a cancelled context
	// does (the gateway withdraws a token request whose client went away). 0 means no bound
	// but the context's.
	Timeout time.Duration
}

// Client calls one gateway as one client. The zero value is not usable; call New.
type Client struct {
	base    string // scheme://host[/prefix] without a trailing slash
	where   string // the server's URL or unix:PATH, for String
	key     string // Options.Key
	auth    string // "Bearer KEY", or "" to send none
	http    *http.Client
	timeout time.Duration
}

// New returns a client configured by o (nil is the zero Options). It checks the options and
// connects to nothing: the first request does. Its error is an *OptionError.
func New(o *Options) (*Client, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Timeout < 0 {
		return nil, optionErr("Timeout", "must not be negative")
	}
	c := &Client{timeout: opts.Timeout}
	if opts.Key != "" {
		if !bearerToken(opts.Key) {
			return nil, optionErr("Key", "must be a bearer token: letters, digits and -._~+/, then any = padding")
		}
		c.key, c.auth = opts.Key, "Bearer "+opts.Key
	}
	if opts.Socket != "" {
		switch {
		case opts.Server != "":
			return nil, optionErr("Server", "must be unset with Options.Socket")
		case opts.HTTPClient != nil:
			return nil, optionErr("HTTPClient", "must be unset with Options.Socket, whose transport is the client's own")
		}
		path := opts.Socket
		var d net.Dialer
		tr := &http.Transport{
			// Every connection goes to the socket, whatever host the URL names.
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", path) },
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}
		c.base, c.where, c.http = "http://localhost", "unix:"+path, &http.Client{Transport: tr, CheckRedirect: noRedirect}
		return c, nil
	}
	server := opts.Server
	if server == "" {
		server = DefaultServer
	}
	u, err := url.Parse(server)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return nil, optionErr("Server", "must be the gateway's http or https URL, such as "+DefaultServer)
	case u.User != nil:
		return nil, optionErr("Server", "must carry no user info (the key goes in Options.Key)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(server, "#"):
		return nil, optionErr("Server", "must carry no query or fragment")
	}
	c.base = strings.TrimRight(server, "/")
	c.where = c.base
	c.http = opts.HTTPClient
	if c.http == nil {
		c.http = &http.Client{CheckRedirect: noRedirect}
	}
	return c, nil
}

// OptionError is an option New refuses: which one and the rule it breaks, never its value.
type OptionError struct {
	Option string // the field of Options: "Server", "Socket", "Key", "HTTPClient", "Timeout"
	Rule   string
}

func (e *OptionError) Error() string { return "client: Options." + e.Option + ": " + e.Rule }

func optionErr(option, rule string) error { return &OptionError{Option: option, Rule: rule} }

// noRedirect answers a redirect with the redirect itself, which the client then refuses as
// not the API's answer.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// bearerToken reports whether s is an RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_"
// / "~" / "+" / "/" ) *"=". Nothing else can stand in an Authorization header as a key.
func bearerToken(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// String names the gateway the client calls, never its key.
func (c *Client) String() string { return "capgate client of " + c.where }

// GoString is String, so that %#v does not print the key either.
func (c *Client) GoString() string { return c.String() }

// answer is what came back for one request.
type answer struct {
	endpoint string // "POST /v1/ipc"
	status   int
	body     []byte
	secrets  []string // the key and the tokens the request carried, never to be repeated
}

// scrub is s with every secret the request carried taken out: the gateway puts none in what
// it says, but a server that is not the gateway might repeat what it was sent.
func (a answer) scrub(s string) string {
	for _, x := range a.secrets {
		if len(x) >= minSecretBytes {
			s = strings.ReplaceAll(s, x, "[redacted]")
		}
	}
	return s
}

// protocol is a *ProtocolError about a.
func (a answer) protocol(reason string) error {
	return &ProtocolError{Endpoint: a.endpoint, HTTPStatus: a.status, Reason: reason}
}

// do sends one request, with body as its JSON when not nil and with the key when withKey,
// and reads the answer.
// secrets are the tokens body carries, which the answer's words must not repeat.
func (c *Client) do(ctx context.Context, method, path string, body any, withKey bool, secrets ...string) (answer, error) {
	a := answer{endpoint: method + " " + path, secrets: append(secrets, c.key)}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			// What is sent was checked first (Call.Params, the constraints' JSON): only a
			// bug reaches this, and the encoder's words could quote the value.
			return a, fmt.Errorf("client: %s: the request cannot be encoded as JSON", a.endpoint)
		}
		rd = bytes.NewReader(b)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return a, fmt.Errorf("client: %s: %w", a.endpoint, err)
	}
	if withKey && c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return a, err // a *url.Error: the method and URL, and the cause; never a header
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	a.body, err = io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return a, fmt.Errorf("client: %s: reading the answer: %w", a.endpoint, err)
	}
	if len(a.body) > MaxAnswerBytes {
		return a, a.protocol(fmt.Sprintf("the answer is larger than %d bytes", MaxAnswerBytes))
	}
	return a, nil
}

// doJSON is do, with the key, for the endpoints that answer 200 with a JSON object: another
// status is the gateway's refusal (failure), and the object is decoded into out. It returns
// the answer for the caller's own checks of what the object holds.
func (c *Client) doJSON(ctx context.Context, method, path string, body, out any, secrets ...string) (answer, error) {
	a, err := c.do(ctx, method, path, body, true, secrets...)
	if err != nil {
		return a, err
	}
	if a.status != http.StatusOK {
		return a, a.failure()
	}
	return a, a.decodeJSON(out)
}

// decodeJSON decodes a's body into v: a JSON object, members the client does not know
// ignored (a newer gateway may add some).
func (a answer) decodeJSON(v any) error {
	if !json.Valid(a.body) || len(bytes.TrimSpace(a.body)) == 0 || bytes.TrimSpace(a.body)[0] != '{' {
		return a.protocol("the answer is not a JSON object")
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		return a.protocol("the answer's members are not of the API's types")
	}
	return nil
}

// Health checks that the gateway is up (GET /healthz, which needs no key and is sent none).
func (c *Client) Health(ctx context.Context) error {
	a, err := c.do(ctx, http.MethodGet, "/healthz", nil, false)
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return a.protocol("the gateway is not healthy")
	}
	return nil
}
