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
	"path/filepath"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/sandbox"
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
	// Bind are the host's folders a stdio server sees in its sandbox, each at its own path,
	// read-only unless RW: nothing else of the host's files but the system's libraries and
	// its program.
	Bind []Bind `json:"bind,omitempty"`
	// Allow are the only destinations (HOST:PORT) a stdio server reaches, through capgate's
	// egress proxy; none: it has no network.
	Allow []string `json:"allow,omitempty"`
}

// Network gives a stdio server its network: a session of capgate's egress proxy for the app
// appID, reaching only allow.
type Network interface {
	// Session opens it: the socket the server's sandbox forwards its proxy to, the proxy
	// credential the server sends, and the function that ends the session.
	Session(appID string, allow []egress.HostPort) (socket string, user *url.Userinfo, end func(), err error)
}

// Bind is one folder a stdio tool server sees: an absolute clean path, read-only unless RW.
type Bind struct {
	Path string `json:"path"`
	RW   bool   `json:"rw,omitempty"`
}

// ParseBind reads a --bind value: PATH, or PATH:rw for read-write (PATH:ro is read-only).
func ParseBind(s string) (Bind, error) {
	b := Bind{Path: s}
	if p, mode, ok := strings.Cut(s, ":"); ok {
		switch mode {
		case "rw":
			b = Bind{Path: p, RW: true}
		case "ro":
			b = Bind{Path: p}
		default:
			return Bind{}, fmt.Errorf("%w: bind must be PATH, PATH:ro or PATH:rw", ErrInvalidConfig)
		}
	}
	if !filepath.IsAbs(b.Path) || filepath.Clean(b.Path) != b.Path || b.Path == "/" || strings.ContainsRune(b.Path, 0) {
		return Bind{}, fmt.Errorf("%w: bind must be a clean absolute path other than /", ErrInvalidConfig)
	}
	return b, nil
}

// Reach says in words what a stdio server can reach in its sandbox: its folders, and no network.
func (c Config) Reach() string {
	if c.URL != "" {
		return ""
	}
	network := "no network"
	if len(c.Allow) > 0 {
		network = "the network only to " + strings.Join(c.Allow, ", ") + " (through capgate's egress proxy)"
	}
	if len(c.Bind) == 0 {
		return "sandboxed: no folder of the host's; " + network
	}
	var bs []string
	for _, b := range c.Bind {
		mode := "read-only"
		if b.RW {
			mode = "read-write"
		}
		bs = append(bs, b.Path+" ("+mode+")")
	}
	return "sandboxed: sees " + strings.Join(bs, ", ") + "; " + network
}

// String is the Bind as --bind takes it.
func (b Bind) String() string {
	if b.RW {
		return b.Path + ":rw"
	}
	return b.Path
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
	if len(c.Bind) > MaxBinds {
		bad("bind", fmt.Sprintf("must list at most %d folders", MaxBinds))
	}
	for i, b := range c.Bind {
		if c.URL != "" {
			bad("bind", "must not be set with a url")
			break
		}
		if _, err := ParseBind(b.Path); err != nil || strings.Contains(b.Path, ":") {
			bad(fmt.Sprintf("bind[%d]", i), "must be a clean absolute path other than /, without ':'")
		}
	}
	if len(c.Allow) > MaxAllow {
		bad("allow", fmt.Sprintf("must list at most %d destinations", MaxAllow))
	}
	for i, a := range c.Allow {
		if c.URL != "" {
			bad("allow", "must not be set with a url")
			break
		}
		if _, err := egress.ParseHostPort(a); err != nil {
			bad(fmt.Sprintf("allow[%d]", i), "must be HOST:PORT")
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

// baseEnv are the variables every stdio child gets from capgate's environment. HOME is not
// among them: a sandboxed server has no home folder (HOME is its private /tmp).
var baseEnv = []string{"PATH", "LANG"}

// Environ is the whole environment of a stdio child: PATH and LANG and the listed variables,
// each only when lookup finds it, and HOME=/tmp (the sandbox's private /tmp; no home folder of
// the host's). Nothing else of capgate's environment passes.
func (c Config) Environ(lookup func(string) (string, bool)) []string {
	env := []string{"HOME=/tmp"}
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, baseEnv...), c.Env...) {
		if seen[name] || name == "HOME" || strings.HasPrefix(strings.ToUpper(name), "CAPGATE_") {
			continue
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// transport returns the MCP transport to the server: a child started in box (a sandbox of its
// own) with a scrubbed environment, or a streamable HTTP client that sends no credential of
// capgate's. A nil box refuses a stdio server.
func (c Config) transport(box *sandbox.Sandbox, network Network) (mcpsdk.Transport, func(), func(), error) {
	if err := c.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if c.URL != "" {
		return &mcpsdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: &http.Client{}, DisableStandaloneSSE: false}, func() {}, func() {}, nil
	}
	if box == nil {
		return nil, nil, nil, ErrNoSandbox
	}
	spec, err := c.spec(box)
	if err != nil {
		return nil, nil, nil, err
	}
	end := func() {}
	if len(c.Allow) > 0 && network != nil {
		var allow []egress.HostPort
		for _, a := range c.Allow {
			hp, _ := egress.ParseHostPort(a) // checked by Validate
			allow = append(allow, hp)
		}
		sock, user, stop, err := network.Session(c.AppID(), allow)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("toolserver %s: its network: %w", c.Name, err)
		}
		spec.ProxySocket, spec.ProxyUser, end = sock, user, stop
		spec.Tunnels = tunnels(allow)
	}
	cmd, err := box.Command(spec)
	if err != nil {
		end()
		return nil, nil, nil, fmt.Errorf("toolserver %s: %w", c.Name, err)
	}
	cmd.Stderr = nil // the child's stderr is discarded: it is untrusted text
	started := func() {
		// The child holds its own descriptors of the program opened: capgate's are closed.
		for _, f := range cmd.ExtraFiles {
			f.Close()
		}
	}
	return &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: StdioTerminateWait}, started, end, nil
}

// tunnels are the destinations of allow a server reaches by name even when it ignores the
// proxy variables (as Node's fetch does): every one named by a DNS name. An address or a
// wildcard has no name the sandbox can map; the server reaches it through HTTP_PROXY.
func tunnels(allow []egress.HostPort) []sandbox.Tunnel {
	var out []sandbox.Tunnel
	for _, hp := range allow {
		if sandbox.TunnelName(hp.Host()) {
			out = append(out, sandbox.Tunnel{Host: hp.Host(), Port: int(hp.Port())})
		}
	}
	return out
}

// ErrNoSandbox is a stdio tool server that cannot be started: no sandbox can be made here.
var ErrNoSandbox = errors.New("toolserver: stdio servers run only in a sandbox, and none can be made here: install bubblewrap, or run them unconfined with sandbox: off-unsafe in the configuration file (CAPGATE_SANDBOX=off-unsafe, capgate serve --sandbox=off-unsafe)")

// spec is the server's sandbox spec: its program found on PATH when it names no folder,
// its links resolved, and bound read-only at its own path (the file opened, so that a program
// swapped in between is not the one run); the Bind folders at their paths; its working folder
// the first Bind, else /.
func (c Config) spec(box *sandbox.Sandbox) (sandbox.Spec, error) {
	prog := c.Command
	if !strings.ContainsRune(prog, '/') {
		p, err := exec.LookPath(prog)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("toolserver %s: command: %w", c.Name, err)
		}
		prog = p
	}
	prog, err := filepath.Abs(prog)
	if err == nil {
		prog, err = filepath.EvalSymlinks(prog)
	}
	if err != nil {
		return sandbox.Spec{}, fmt.Errorf("toolserver %s: command: %w", c.Name, err)
	}
	spec := sandbox.Spec{Program: prog, Args: append([]string{c.Command}, c.Args...), Dir: "/", Env: c.Environ(os.LookupEnv)}
	for _, b := range c.Bind {
		if b.RW {
			spec.Writable = append(spec.Writable, b.Path)
		} else {
			spec.ReadOnly = append(spec.ReadOnly, b.Path)
		}
	}
	if len(c.Bind) > 0 {
		spec.Dir = c.Bind[0].Path
	}
	if !box.Sees(prog, append(append([]string(nil), spec.ReadOnly...), spec.Writable...)) {
		f, err := os.OpenFile(prog, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("toolserver %s: command: %w", c.Name, err)
		}
		spec.ProgramFD = f
	}
	return spec, nil
}

// Connect starts or reaches the server and opens an MCP session at the newest revision
// both speak (Revisions). onChange, when set, is called (from the session's own goroutine:
// it must not block) on each notifications/tools/list_changed. The server's information
// requests are declined: only a running gateway (Manager) takes them to the person.
func Connect(ctx context.Context, c Config, box *sandbox.Sandbox, version string, onChange func()) (*mcpsdk.ClientSession, error) {
	return ConnectWith(ctx, c, box, nil, version, onChange)
}

// ConnectWith is Connect with network, which gives a stdio server with Config.Allow its
// destinations (nil: it has no network), for as long as the session lasts.
func ConnectWith(ctx context.Context, c Config, box *sandbox.Sandbox, network Network, version string, onChange func()) (*mcpsdk.ClientSession, error) {
	return connect(ctx, c, box, network, version, onChange, nil)
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
