package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Credentials is the host's credential catalog: the credential intents plugins may name, and
// for each that capgate can honour, where its secret comes from, where it may be sent and how.
// In the configuration file it is either a list of names (intents plugins may declare, with no
// secret: capgate honours none of them),
//
//	credentials: [kb.search.api]
//
// or a map of names to their source, destinations and header:
//
//	credentials:
//	  kb.search.api:
//	    from_env: KB_TOKEN                       # or from_file: /etc/capgate/kb.token
//	    destinations: ["kb.example.com:443"]
//	    header: "Authorization: Bearer {secret}"
//
// The secret is never in the file: it is read from capgate's environment or from a file when
// a handle is honoured, and never reaches a sandbox, a log line, the audit log or an error.
type Credentials map[string]*Credential

// Credential is where one intent's secret comes from, where it may be sent and how.
type Credential struct {
	// FromEnv names a variable of capgate's environment holding the secret.
	FromEnv string `json:"from_env,omitempty"`
	// FromFile is a file holding the secret (relative to the configuration file); its
	// content without a final newline.
	FromFile string `json:"from_file,omitempty"`
	// Destinations are the only places the secret is sent: HOST:PORT, the host an exact
	// lowercase DNS name or an IP literal ([...] for IPv6).
	Destinations []string `json:"destinations"`
	// Header is the request header that carries it: "Name: value", the value holding
	// {secret} once.
	Header string `json:"header"`
}

// The limits of the catalog.
const (
	// MaxCredentials bounds the catalog's entries.
	MaxCredentials = 256
	// MaxDestinations bounds one credential's destinations.
	MaxDestinations = 32
	// MaxHeaderBytes bounds a header template.
	MaxHeaderBytes = 1024
)

var (
	intentName = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)
	envVar     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
)

// UnmarshalJSON reads the list form or the map form.
func (c *Credentials) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var names []string
		if err := json.Unmarshal(b, &names); err != nil {
			return errors.New("credentials: must be a list of intent names or a map of them")
		}
		out := Credentials{}
		for i, n := range names {
			if _, dup := out[n]; dup {
				return fmt.Errorf("credentials[%d]: named twice", i)
			}
			out[n] = nil
		}
		*c = out
		return c.check()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	m := map[string]*Credential{}
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	*c = m
	return c.check()
}

// Names are the intents of the catalog, sorted.
func (c Credentials) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// check reports the first rule the catalog breaks, naming its field path; never a value but
// the intent's own name.
func (c Credentials) check() error {
	if len(c) > MaxCredentials {
		return fmt.Errorf("credentials: more than %d", MaxCredentials)
	}
	for _, name := range c.Names() {
		if !intentName.MatchString(name) {
			return errors.New("credentials: an intent name must match ^[a-z][a-z0-9._-]{0,127}$")
		}
		e := c[name]
		if e == nil {
			continue
		}
		at := "credentials." + name
		switch {
		case (e.FromEnv == "") == (e.FromFile == ""):
			return fmt.Errorf("%s: exactly one of from_env and from_file", at)
		case e.FromEnv != "" && !envVar.MatchString(e.FromEnv):
			return fmt.Errorf("%s.from_env: must be a variable name", at)
		case e.FromEnv != "" && strings.HasPrefix(strings.ToUpper(e.FromEnv), "CAPGATE_"):
			return fmt.Errorf("%s.from_env: must not be one of capgate's own CAPGATE_ variables", at)
		case e.FromFile != "" && strings.ContainsRune(e.FromFile, 0):
			return fmt.Errorf("%s.from_file: must be a path", at)
		case len(e.Destinations) == 0:
			return fmt.Errorf("%s.destinations: required: where the secret may be sent", at)
		case len(e.Destinations) > MaxDestinations:
			return fmt.Errorf("%s.destinations: more than %d", at, MaxDestinations)
		}
		for i, d := range e.Destinations {
			if rule := destinationRule(d); rule != "" {
				return fmt.Errorf("%s.destinations[%d]: %s", at, i, rule)
			}
		}
		if rule := headerRule(e.Header); rule != "" {
			return fmt.Errorf("%s.header: %s", at, rule)
		}
	}
	return nil
}

// destinationRule is the rule a HOST:PORT destination breaks, or "".
func destinationRule(d string) string {
	host, port, err := net.SplitHostPort(d)
	if err != nil || host == "" {
		return "must be HOST:PORT"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "the port must be 1 to 65535"
	}
	if host != strings.ToLower(host) || strings.HasSuffix(host, ".") || strings.ContainsAny(host, "/*@ ") {
		return "the host must be an exact lowercase name or an IP literal"
	}
	return ""
}

// headerRule is the rule a header template breaks, or "".
func headerRule(h string) string {
	name, value, ok := strings.Cut(h, ":")
	switch {
	case len(h) > MaxHeaderBytes:
		return fmt.Sprintf("longer than %d bytes", MaxHeaderBytes)
	case !ok || !headerName.MatchString(name):
		return `must be "Name: value" with a header name`
	case strings.Count(value, "{secret}") != 1:
		return "the value must hold {secret} once"
	case strings.ContainsAny(value, "\r\n\x00"):
		return "the value must be one line"
	}
	return ""
}

// resolveFiles makes the catalog's from_file paths absolute, relative to base.
func (c Credentials) resolveFiles(base string) {
	for _, e := range c {
		if e != nil && e.FromFile != "" && !filepath.IsAbs(e.FromFile) {
			e.FromFile = filepath.Join(base, e.FromFile)
		}
	}
}
