package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/intent"
)

// HandleHeader is the request header that carries a credential handle. A provider that holds
// a handle sends its request through the proxy as plain HTTP in absolute form, to
// http://HOST[:PORT]/PATH with this header; the proxy removes the header, checks the
// destination against the handle's intent and the call, opens TLS to HOST:PORT itself
// (verifying the server's certificate for HOST), sets the intent's header with the secret,
// and forwards the request. An absent port means 443, not 80, since the request always
// travels upstream over TLS. The secret never enters the sandbox: the provider holds only the
// handle, which is worth nothing outside this proxy and this call.
const HandleHeader = "Capgate-Credential"

// DefaultHeader is the header template of a Credential whose Header is empty.
const DefaultHeader = "Authorization: Bearer {secret}"

// secretPlaceholder is the place of the secret in a header template.
const secretPlaceholder = "{secret}"

// Credential is one entry of the host's credential catalog: where the secret of a credential
// intent comes from, where it may be sent, and how. It is the host's configuration, never a
// manifest's: a plugin names the intent and nothing more.
type Credential struct {
	// Intent is the credential intent's name, ^[a-z][a-z0-9._-]{0,127}$.
	Intent string
	// Source is where the secret is read, when a handle is minted.
	Source Source
	// Destinations are where the secret may be sent, each over TLS. A request with a handle
	// reaches only a destination listed here that the calling capability also declares.
	Destinations []HostPort
	// Header is how the secret is sent: "Name: value", where the value holds {secret} once,
	// such as "Authorization: Bearer {secret}" (DefaultHeader, for ""). The header replaces
	// any header of that name the provider sent.
	Header string
}

// Source is where a secret comes from: exactly one of File and Env is set.
type Source struct {
	// File is the absolute path of a regular file holding the secret, with one trailing
	// newline allowed. Like capgate's private key, it must not be readable or writable by
	// group or others: a file other users can read is no secret.
	File string
	// Env is the name of an environment variable of capgate's own process.
	Env string
}

// Errors of Handle. None carries a secret, a path or a variable's name.
var (
	// ErrCallNotOpen: the call is not open in this proxy (never opened, or done).
	ErrCallNotOpen = errors.New("the call is not open in the egress proxy")
	// ErrIntentNotDeclared: the calling capability does not declare the intent.
	ErrIntentNotDeclared = errors.New("the calling capability does not declare this credential intent")
	// ErrIntentNotInCatalog: the host's credential catalog has no entry for the intent.
	ErrIntentNotInCatalog = errors.New("the host's credential catalog has no entry for this credential intent")
	// ErrSecretUnavailable: the entry's secret cannot be read or is not a usable secret; the
	// proxy's log says why, without the secret.
	ErrSecretUnavailable = errors.New("the credential's secret is unavailable")
	// ErrTooManyHandles: the call holds MaxHandlesPerCall handles already.
	ErrTooManyHandles = errors.New("the call holds too many credential handles")
)

// credential is a catalog entry checked and parsed by New.
type credential struct {
	Credential
	headerName   string // canonical MIME header key
	valuePrefix  string
	valueSuffix  string
	destinations map[HostPort]bool
}

// checkCatalog checks the catalog, reporting every problem with its field path.
func checkCatalog(cs []Credential) (map[string]*credential, error) {
	if len(cs) > MaxCredentials {
		return nil, fmt.Errorf("credentials: must have at most %d entries", MaxCredentials)
	}
	out := make(map[string]*credential, len(cs))
	var errs []error
	bad := func(path, rule string) { errs = append(errs, fmt.Errorf("%s: %s", path, rule)) }
	for i, c := range cs {
		at := fmt.Sprintf("credentials[%d]", i)
		if rule := intent.CredentialRule(c.Intent, intent.Host{}); rule != "" {
			bad(at+".intent", rule)
		} else if out[c.Intent] != nil {
			bad(at+".intent", "must not repeat an earlier entry's intent")
		}
		switch {
		case (c.Source.File == "") == (c.Source.Env == ""):
			bad(at+".source", "must set exactly one of file and env")
		case c.Source.File != "" && (!filepath.IsAbs(c.Source.File) || filepath.Clean(c.Source.File) != c.Source.File):
			bad(at+".source.file", "must be an absolute clean path")
		case c.Source.Env != "" && !envName(c.Source.Env):
			bad(at+".source.env", "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
		}
		cr := &credential{Credential: c, destinations: map[HostPort]bool{}}
		switch {
		case len(c.Destinations) == 0:
			bad(at+".destinations", "must name at least one destination")
		case len(c.Destinations) > MaxCredentialDestinations:
			bad(at+".destinations", fmt.Sprintf("must have at most %d entries", MaxCredentialDestinations))
		}
		for j, d := range c.Destinations {
			if !d.IsValid() {
				bad(fmt.Sprintf("%s.destinations[%d]", at, j), "must be a valid host and port")
			}
			cr.destinations[d] = true
		}
		h := c.Header
		if h == "" {
			h = DefaultHeader
		}
		name, prefix, suffix, err := parseHeaderTemplate(h)
		if err != nil {
			bad(at+".header", err.Error())
		}
		cr.headerName, cr.valuePrefix, cr.valueSuffix = name, prefix, suffix
		if out[c.Intent] == nil {
			out[c.Intent] = cr
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func envName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// reservedHeaders are headers a template may not name: the framing and routing of the
// request, the proxy's own, and the hop-by-hop headers that never reach the destination.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true, "Proxy-Connection": true,
	"Proxy-Authorization": true, "Proxy-Authenticate": true, HandleHeader: true,
}

// parseHeaderTemplate reads "Name: value" where value holds {secret} exactly once. The name is
// an RFC 9110 token; the value, around the placeholder, is visible ASCII and spaces, with no
// space at either end, and no brace outside the placeholder. It returns the canonical header
// name and the value around the secret.
func parseHeaderTemplate(t string) (name, prefix, suffix string, err error) {
	n, v, ok := strings.Cut(t, ":")
	if !ok {
		return "", "", "", fmt.Errorf(`must be "Name: value"`)
	}
	if n == "" || len(n) > 256 {
		return "", "", "", fmt.Errorf("must have a header name of 1 to 256 bytes")
	}
	for i := 0; i < len(n); i++ {
		if !tokenChar(n[i]) {
			return "", "", "", fmt.Errorf("must have a header name of token characters (RFC 9110)")
		}
	}
	name = http.CanonicalHeaderKey(n)
	if reservedHeaders[name] {
		return "", "", "", fmt.Errorf("must not name a header that frames, routes or authenticates to the proxy")
	}
	v = strings.TrimPrefix(v, " ")
	if len(v) > 1024 || v != strings.TrimSpace(v) {
		return "", "", "", fmt.Errorf("must have a value of at most 1024 bytes without surrounding space")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", "", "", fmt.Errorf("must have a value of visible ASCII characters and spaces")
		}
	}
	if strings.Count(v, secretPlaceholder) != 1 {
		return "", "", "", fmt.Errorf("must hold %s exactly once in the value", secretPlaceholder)
	}
	prefix, suffix, _ = strings.Cut(v, secretPlaceholder)
	if strings.ContainsAny(prefix+suffix, "{}") {
		// Braces outside the placeholder would let the text around it spell another one.
		return "", "", "", fmt.Errorf("must not hold { or } outside %s", secretPlaceholder)
	}
	return name, prefix, suffix, nil
}

func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// readSecret reads s's secret and checks it is usable in a header. Errors say why without the
// secret; they may name the file or variable, and go to the operator's log only.
func readSecret(s Source) ([]byte, error) {
	var b []byte
	if s.Env != "" {
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return nil, fmt.Errorf("environment variable %s is not set", s.Env)
		}
		b = []byte(v)
	} else {
		f, err := os.Open(s.File)
		if err != nil {
			return nil, fmt.Errorf("secret file: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("secret file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("secret file %s is not a regular file", s.File)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("secret file %s is readable or writable by group or others", s.File)
		}
		b, err = io.ReadAll(io.LimitReader(f, MaxSecretBytes+3))
		if err != nil {
			return nil, fmt.Errorf("secret file: %w", err)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
	}
	if len(b) < MinSecretBytes || len(b) > MaxSecretBytes {
		return nil, fmt.Errorf("the secret must be %d to %d bytes", MinSecretBytes, MaxSecretBytes)
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return nil, fmt.Errorf("the secret must be visible ASCII characters without spaces")
		}
	}
	return b, nil
}

// redactor masks every occurrence of secret in what it reads from r, byte for byte (the
// length, and so Content-Length, is kept). A destination that echoes the request's headers
// (a debugging endpoint, an error page) would otherwise hand the secret to the sandbox. It
// holds back the last len(secret)-1 bytes until it knows they do not begin an occurrence.
// Encodings of the secret (base64, a compressed body) are not recognised; the proxy asks for
// an identity encoding for that reason.
type redactor struct {
	r      io.ReadCloser
	secret []byte
	mask   byte
	buf    []byte // read, masked, not yet released
	err    error
}

func newRedactor(r io.ReadCloser, secret []byte) *redactor {
	return &redactor{r: r, secret: secret, mask: maskByte(secret)}
}

// maskByte returns a visible byte that does not occur in secret, so that masking never makes
// a new occurrence. A secret of visible ASCII without spaces leaves ' ' at least.
func maskByte(secret []byte) byte {
	for _, c := range []byte("*#~X ") {
		if bytes.IndexByte(secret, c) < 0 {
			return c
		}
	}
	return ' '
}

func (x *redactor) Read(p []byte) (int, error) {
	keep := len(x.secret) - 1
	for {
		release := len(x.buf) - keep
		if x.err != nil {
			release = len(x.buf)
		}
		if release > 0 {
			n := copy(p, x.buf[:release])
			x.buf = x.buf[n:]
			return n, nil
		}
		if x.err != nil {
			return 0, x.err
		}
		chunk := make([]byte, max(len(p), 4096))
		n, err := x.r.Read(chunk)
		x.buf = append(x.buf, chunk[:n]...)
		maskAll(x.buf, x.secret, x.mask)
		x.err = err
	}
}

func (x *redactor) Close() error { return x.r.Close() }

// maskAll overwrites every occurrence of secret in b with mask.
func maskAll(b, secret []byte, mask byte) {
	for i := 0; ; {
		j := bytes.Index(b[i:], secret)
		if j < 0 {
			return
		}
		for k := range secret {
			b[i+j+k] = mask
		}
		i += j + len(secret)
	}
}

// maskString is maskAll for a header value.
func maskString(s string, secret []byte, mask byte) string {
	if !strings.Contains(s, string(secret)) {
		return s
	}
	b := []byte(s)
	maskAll(b, secret, mask)
	return string(b)
}
