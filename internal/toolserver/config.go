package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/manifest"
)

// Errors callers test with errors.Is.
var (
	// ErrInvalidConfig is a Config that breaks a rule; the error names the field.
	ErrInvalidConfig = errors.New("toolserver: invalid configuration")
	// ErrNotToolServer is an app that is not a tool server capgate added.
	ErrNotToolServer = errors.New("toolserver: no such tool server")
)

// AppPrefix starts the app id of every tool server: NAME is the app mcp.NAME.
const AppPrefix = "mcp."

// Config is one tool server as the operator added it. Exactly one of Command and URL is set.
//
// Evolution: fields may be added with omitempty, never renamed; a Config is stored as JSON.
type Config struct {
	Name    string   `json:"name"`              // [a-z][a-z0-9-]{0,31}, not ending in '-'
	Command string   `json:"command,omitempty"` // stdio: the program, found on PATH if it has no slash
	Args    []string `json:"args,omitempty"`    // stdio: its arguments
	URL     string   `json:"url,omitempty"`     // streamable HTTP: http or https
	// Env names the variables of capgate's environment the child may see, besides PATH,
	// HOME and LANG. Names starting with CAPGATE_ are refused: they hold capgate's own keys.
	Env []string `json:"env,omitempty"`
}

// AppID is the app id of the tool server: mcp.NAME.
func (c Config) AppID() string { return AppPrefix + c.Name }

// Validate reports every rule c breaks, each wrapping ErrInvalidConfig and naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, rule string) { errs = append(errs, fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, rule)) }
	if err := CheckName(c.Name); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.Command == "" && c.URL == "":
		bad("command", "or url is required")
	case c.Command != "" && c.URL != "":
		bad("url", "must not be set with a command")
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "must be an http or https URL")
		} else if u.User != nil {
			bad("url", "must not hold credentials")
		}
		if len(c.Args) > 0 {
			bad("args", "must not be set with a url")
		}
	}
	if len(c.Env) > MaxEnv {
		bad("env", fmt.Sprintf("must list at most %d names", MaxEnv))
	}
	for i, name := range c.Env {
		switch {
		case !envName(name):
			bad(fmt.Sprintf("env[%d]", i), "must be a variable name ([A-Za-z_][A-Za-z0-9_]*)")
		case strings.HasPrefix(strings.ToUpper(name), "CAPGATE_"):
			bad(fmt.Sprintf("env[%d]", i), "must not be one of capgate's own CAPGATE_ variables")
		}
	}
	return errors.Join(errs...)
}

// CheckName reports whether name is a valid tool server name: 1 to MaxNameBytes bytes of
// lowercase letters, digits and hyphens, starting with a letter and not ending with a
// hyphen, so that mcp.NAME is a valid app id and NAME a valid alias.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameBytes {
		return fmt.Errorf("%w: name must be 1 to %d bytes", ErrInvalidConfig, MaxNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (i == 0 || ((c < '0' || c > '9') && c != '-')) {
			return fmt.Errorf("%w: name must be lowercase letters, digits and '-', starting with a letter", ErrInvalidConfig)
		}
	}
	if _, err := manifest.ParseAppID(AppPrefix + name); err != nil {
		return fmt.Errorf("%w: name must end with a letter or digit", ErrInvalidConfig)
	}
	return nil
}

// NameOf returns the tool server name of an app id, and whether it is one.
func NameOf(appID string) (string, bool) {
	name, ok := strings.CutPrefix(appID, AppPrefix)
	return name, ok && CheckName(name) == nil
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// baseEnv are the variables every stdio child gets from capgate's environment.
var baseEnv = []string{"PATH", "HOME", "LANG"}

// Environ is the whole environment of a stdio child: PATH, HOME and LANG and the listed
// variables, each only when lookup finds it. Nothing else of capgate's environment passes.
func (c Config) Environ(lookup func(string) (string, bool)) []string {
	env := []string{}
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, baseEnv...), c.Env...) {
		if seen[name] || strings.HasPrefix(strings.ToUpper(name), "CAPGATE_") {
			continue
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// transport returns the MCP transport to the server: a child started with a scrubbed
// environment, or a streamable HTTP client that sends no credential of capgate's.
func (c Config) transport() (mcpsdk.Transport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.URL != "" {
		return &mcpsdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: &http.Client{}, DisableStandaloneSSE: false}, nil
	}
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = c.Environ(os.LookupEnv)
	cmd.Stderr = nil // the child's stderr is discarded: it is untrusted text
	return &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: StdioTerminateWait}, nil
}

// Connect starts or reaches the server and completes the MCP handshake. onChange, when set,
// is called (from the session's own goroutine: it must not block) on each
// notifications/tools/list_changed.
func Connect(ctx context.Context, c Config, version string, onChange func()) (*mcpsdk.ClientSession, error) {
	t, err := c.transport()
	if err != nil {
		return nil, err
	}
	opts := &mcpsdk.ClientOptions{}
	if onChange != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcpsdk.ToolListChangedRequest) { onChange() }
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "capgate", Version: version}, opts)
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	s, err := client.Connect(cctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("toolserver %s: connect: %w", c.Name, err)
	}
	return s, nil
}

// List returns every tool the server lists, in its order, at most MaxTools (more: cut is
// set).
func List(ctx context.Context, s *mcpsdk.ClientSession) (tools []*mcpsdk.Tool, cut bool, err error) {
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	for t, err := range s.Tools(lctx, nil) {
		if err != nil {
			return nil, false, fmt.Errorf("toolserver: tools/list: %w", err)
		}
		if len(tools) == MaxTools {
			return tools, true, nil
		}
		tools = append(tools, t)
	}
	return tools, false, nil
}

func (c Config) marshal() []byte {
	b, _ := json.Marshal(c)
	return b
}
