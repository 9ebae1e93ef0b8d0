package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/internal/web"
	"github.com/capgate/capgate/manifest"
)

// dataDir resolves the data folder: --data, $CAPGATE_DATA_DIR, data_dir in the file, default.
func (g *globals) dataDir(flag string) (string, error) {
	l, err := g.load(hostFlags{dataDir: flag})
	if err != nil {
		return "", err
	}
	if l.dataDir == "" {
		return "", usageErr("no data folder: set --data, CAPGATE_DATA_DIR or data_dir")
	}
	return l.dataDir, nil
}

func newServeCmd(g *globals) *cobra.Command {
	var listen, socket, data, trusted, logLevel, workspace, sandboxMode, witness string
	var uiHosts []string
	var requireToken bool
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--socket PATH] [--data DIR] [--store URL] [--workspace DIR] [--sandbox on|off-unsafe]",
		Short: "Run the gateway: the IPC API over HTTP and a unix socket",
		Long: `Run the gateway, by default on its embedded SQLite store. With no configuration it listens on
127.0.0.1:7766 (loopback only) and on the unix socket capgate.sock in the data folder
($XDG_DATA_HOME/capgate by default), where it keeps its store, its own key (capgate.key: signs
tokens and audit checkpoints) and the audit log's JSON-lines mirror.

It runs the built-in apps (settings, files, editor, terminal, python, calc, syslog,
solitaire) at Tier 1, signed at start with a local app key (DATA/apps.key) whose public half it
places in DATA/trusted. Files, editor, terminal and python work inside the workspace folder
(--workspace, $CAPGATE_WORKSPACE or workspace in the config file; default DATA-workspace, beside
the data folder, which it may neither lie in nor hold): no path they take leaves it.

The terminal's commands and python's scripts each run in a sandbox of their own, on
bubblewrap (Debian: apt-get install bubblewrap): new user, pid, network and ipc namespaces, no
network, the system's programs read-only, the workspace the only folder they can write, and
nothing of the data folder, the keys or the configuration. Without bubblewrap those two apps
are not served (the others are); --sandbox=off-unsafe runs them with capgate's own rights.

Several replicas can share one PostgreSQL database: give each --store postgres://... (or
$CAPGATE_STORE, or store in the config file) and the same keys (one shared --data folder, or
copies of its capgate.key, apps.key and trusted/). Use counts, revocations, consent answers and
the audit chain are then one across them. A replica that finds the data folder's socket served
by another serves TCP only.

Agents authenticate with a client key (capgate client add NAME) as a bearer token, or over the
socket by their uid (capgate client add --uid). SIGINT or SIGTERM stops it gracefully: calls in
flight finish and a final audit checkpoint is signed.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDir(data)
			if err != nil {
				return err
			}
			l, err := g.load(hostFlags{trustedDir: trusted, witness: witness})
			if err != nil {
				return err
			}
			if _, err := gateway.AuditWitnesses(dir, l.witness); err != nil {
				return usageErr("--audit-witness: %w", err)
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErr("--log-level: must be debug, info, warn or error")
			}
			logger := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ws := config.Resolve(workspace, config.EnvWorkspace, l.file.Workspace, "")
			mode, err := sandbox.ParseMode(config.Resolve(sandboxMode, config.EnvSandbox, l.file.Sandbox, ""))
			if err != nil {
				return usageErr("--sandbox: must be on or off-unsafe")
			}
			if _, _, err := gateway.ParseStore(dir, l.store); err != nil {
				return usageErr("--store: %w", err)
			}
			for i, h := range uiHosts {
				if !web.ValidAllowedHost(h) {
					return usageErr("--ui-host[%d]: must be a host name or an address, without port or path", i)
				}
			}
			gateway.TuneRuntime()
			var hidden []string
			if l.configPath != "" {
				hidden = append(hidden, l.configPath)
			}
			gw, err := gateway.Open(ctx, gateway.Config{DataDir: dir, Store: l.store, Listen: listen, Socket: socket, TrustedDir: l.trustedDir, Logger: logger, Workspace: ws, UIHosts: uiHosts,
				Sandbox: mode, Hidden: hidden, RequireToken: requireToken || l.file.RequireToken, AuditWitness: l.witness})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			err = gw.Serve(ctx, func(tcp, sock string) {
				if tcp != "" {
					fmt.Fprintf(w, "capgate serving on http://%s\n", tcp)
				}
				if sock != "" {
					fmt.Fprintf(w, "capgate serving on unix:%s\n", sock)
				}
				fmt.Fprintf(w, "data in %s\n", dir)
				fmt.Fprintf(w, "store: %s\n", gateway.DescribeStore(dir, l.store))
				fmt.Fprintf(w, "apps work in %s\n", gw.Workspace())
				switch {
				case gw.SandboxProblem() != nil:
					fmt.Fprintf(w, "terminal and python NOT served: %v\n", gw.SandboxProblem())
				case mode == sandbox.ModeOffUnsafe:
					fmt.Fprintln(w, "sandbox OFF (--sandbox=off-unsafe): terminal commands and python scripts run with capgate's own rights")
				default:
					fmt.Fprintln(w, "terminal commands and python scripts run sandboxed (bubblewrap)")
				}
				if tcp != "" {
					fmt.Fprintf(w, "approve requests at http://%s%s\n", tcp, gw.LoginLink())
				}
				fmt.Fprintf(w, "add an agent with: capgate client add NAME --data %s\n", dir)
			})
			if cerr := gw.Close(); err == nil {
				err = cerr
			}
			fmt.Fprintln(w, "capgate stopped")
			return err
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "TCP address to listen on (default 127.0.0.1:7766; - for none)")
	cmd.Flags().StringVar(&socket, "socket", "", "unix socket path (default DATA/capgate.sock; - for none)")
	cmd.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else $XDG_DATA_HOME/capgate)")
	cmd.Flags().StringVar(&trusted, "trusted-dir", "", "folder of trusted app keys (default /etc/portal/keys/trusted)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "folder the files, editor, terminal and python apps work in (default DATA-workspace, beside the data folder)")
	cmd.Flags().StringVar(&sandboxMode, "sandbox", "", "on (default): terminal commands and python scripts run in a bubblewrap sandbox, and are not served without one; off-unsafe: they run with capgate's own rights")
	cmd.Flags().StringSliceVar(&uiHosts, "ui-host", nil, "a host name or address, besides loopback, under which the approval page answers (repeatable); any other Host is refused")
	cmd.Flags().BoolVar(&requireToken, "require-token", false, "every call of every client needs a token, even a low-risk read (config: require_token: true); a public one still needs none")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "structured (JSON) log level on stderr: debug (one line per call), info, warn, error")
	cmd.Flags().StringVar(&witness, "audit-witness", "", "also send every audit checkpoint to this witness: an absolute folder outside the data folder, or an http(s) URL of capgate audit witness (default $CAPGATE_AUDIT_WITNESS, else audit_witness in the config file)")
	return cmd
}

// localStore opens the gateway's store directly (--data and --store, else as configured),
// beside a running gateway: SQLite in WAL mode and PostgreSQL both let them share it.
func (g *globals) localStore(ctx context.Context, flag string) (store.Store, string, error) {
	return g.openStore(ctx, flag, false)
}

// openStore opens the store of the data folder flag names, creating a SQLite one when create
// is set; without it, a folder that holds no store yet is an error that says what to run.
func (g *globals) openStore(ctx context.Context, flag string, create bool) (store.Store, string, error) {
	l, err := g.load(hostFlags{dataDir: flag})
	if err != nil {
		return nil, "", err
	}
	dir := l.dataDir
	if dir == "" {
		return nil, "", usageErr("no data folder: set --data, CAPGATE_DATA_DIR or data_dir")
	}
	if _, _, err := gateway.ParseStore(dir, l.store); err != nil {
		return nil, "", usageErr("--store: %w", err)
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", err
		}
	}
	st, err := gateway.OpenStore(ctx, dir, l.store, create)
	if errors.Is(err, gateway.ErrNoStore) {
		return nil, "", &exitError{code: exitNo, err: fmt.Errorf("%w (run capgate serve --data %s first)", err, dir)}
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", gateway.DescribeStore(dir, l.store), err)
	}
	return st, dir, nil
}

func newClientCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "client", Short: "Manage the agents that may call the gateway"}
	var trust, data string
	var neverAsk, requireToken bool
	var uid int64
	add := &cobra.Command{
		Use:   "add NAME [--trust LEVEL] [--uid UID] [--require-token] [--data DIR]",
		Short: "Add a client and print its key (its only line of output)",
		Long: `Add a client (an agent) and print its key as the only line of output. The key is shown once;
capgate keeps only its hash. The agent sends it as "Authorization: Bearer KEY".
Trust levels: public, user (the default), privileged.
--uid binds a unix user id: a process of that user that connects to the gateway's unix socket
without a key is this client (every process of that user, so bind a user that runs only the
agent). --require-token makes every call of the client need a token, even a low-risk read.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := operator.ValidClientName(args[0]); err != nil {
				return usageErr("NAME: %w", err)
			}
			switch trust {
			case "public", "user", "privileged":
			default:
				return usageErr("--trust: must be public, user or privileged")
			}
			var unixUID *int
			if cmd.Flags().Changed("uid") {
				if uid < 0 || uid > maxUID {
					return usageErr("--uid: must be a unix user id, 0 to %d", maxUID)
				}
				u := int(uid)
				unixUID = &u
			}
			ctx := context.Background()
			st, dir, err := g.openStore(ctx, data, true)
			if err != nil {
				return err
			}
			defer st.Close()
			var raw [32]byte
			if _, err := rand.Read(raw[:]); err != nil {
				return err
			}
			key := "cgk_" + base64.RawURLEncoding.EncodeToString(raw[:])
			var id [9]byte
			_, _ = rand.Read(id[:])
			c := store.Client{ID: "cl_" + base64.RawURLEncoding.EncodeToString(id[:]), Name: args[0], KeyHash: ipc.KeyHash(key),
				Trust: trust, NeverAsk: neverAsk, Created: time.Now(), UnixUID: unixUID, RequireToken: requireToken}
			never := ""
			if neverAsk {
				never = ", never asking the person"
			}
			if requireToken {
				never += ", requiring a token for every call"
			}
			if unixUID != nil {
				never += fmt.Sprintf(", bound to the unix uid %d", *unixUID)
			}
			rec := audit.Record{Action: "client.add", Result: "add requested",
				Explanation: fmt.Sprintf("the operator added the client %s (trust %s%s) from the command line", c.ID, trust, never)}
			err = operatorChange(ctx, cmd, st, dir, rec, false, "INVALID_REQUEST", func() error { return st.PutClient(ctx, c) })
			if err != nil {
				if errors.Is(err, store.ErrExists) {
					return &exitError{code: exitNo, err: fmt.Errorf("a client named %q, or bound to that uid, exists", args[0])}
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			return nil
		},
	}
	add.Flags().StringVar(&trust, "trust", "user", "trust level: public, user or privileged")
	add.Flags().BoolVar(&neverAsk, "never-ask", false, "refuse calls that would need consent instead of asking")
	add.Flags().StringVar(&data, "data", "", "data folder")
	add.Flags().Int64Var(&uid, "uid", 0, "bind a unix user id: a peer of the gateway's unix socket with this uid is this client")
	add.Flags().BoolVar(&requireToken, "require-token", false, "every call of this client needs a token, even a low-risk read")
	cmd.AddCommand(add)
	addClientCommands(cmd, g)
	return cmd
}

// clientFlags are how a client command reaches the gateway.
type clientFlags struct{ server, key string }

func (c *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.server, "server", "", "gateway URL (default $CAPGATE_SERVER, else http://127.0.0.1:7766)")
	cmd.Flags().StringVar(&c.key, "client-key", "", "client key (default $CAPGATE_CLIENT_KEY)")
}

func (c *clientFlags) do(method, path string, body []byte) (int, []byte, error) {
	server := config.Resolve(c.server, "CAPGATE_SERVER", "", "http://"+gateway.DefaultListen)
	key := config.Resolve(c.key, "CAPGATE_CLIENT_KEY", "", "")
	if key == "" {
		return 0, nil, usageErr("no client key: pass --client-key or set CAPGATE_CLIENT_KEY")
	}
	req, err := http.NewRequest(method, strings.TrimRight(server, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, usageErr("--server: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	// No timeout of its own: a token request waits as long as its request lives, and an
	// interrupt ends the process, whose closed connection withdraws the request.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, &exitError{code: exitNo, err: fmt.Errorf("cannot reach the gateway: %w", err)}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, out, err
}

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Request, derive and revoke capability tokens"}
	var cf clientFlags
	var caps, reason, cons, duration string
	var maxUses int64
	req := &cobra.Command{
		Use:   "request --capabilities LIST --max-uses N --duration D [--reason TEXT] [--constraints JSON]",
		Short: "Request a token and print it (its only line), waiting for consent where needed",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			secs, err := parseDuration(duration)
			if err != nil {
				return usageErr("--duration: %v", err)
			}
			body := map[string]any{"capabilities": splitList(caps), "duration": secs, "max_uses": maxUses, "reason": reason}
			return postForToken(cmd, cf, "/v1/capabilities/request", body, cons)
		},
	}
	cf.register(req)
	req.Flags().StringVar(&caps, "capabilities", "", "comma-separated permissions or patterns such as fs.read,app.notes.*")
	req.Flags().Int64Var(&maxUses, "max-uses", 0, "most uses (0: no limit)")
	req.Flags().StringVar(&duration, "duration", "1h", "how long the token lives: seconds or a Go duration such as 30m")
	req.Flags().StringVar(&reason, "reason", "", "why, shown to the person and recorded as the audit tag")
	req.Flags().StringVar(&cons, "constraints", "", `constraints JSON, e.g. {"allowed_paths":["/home/me/*"]}`)

	var data string
	var rcf clientFlags
	revoke := &cobra.Command{
		Use:   "revoke TOKEN [--server URL --client-key KEY | --data DIR]",
		Short: "Revoke a token (its wire form or its id) and every token derived from it",
		Long: `Revoke a token and every token derived from it. With a client key (--client-key or
$CAPGATE_CLIENT_KEY) the gateway revokes one of that client's own tokens; without one, capgate
revokes any token directly in the data folder's store, as the operator or the person.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if data == "" && config.Resolve(rcf.key, "CAPGATE_CLIENT_KEY", "", "") != "" {
				b, _ := json.Marshal(map[string]string{"token": args[0]})
				status, out, err := rcf.do("POST", "/v1/tokens/revoke", b)
				if err != nil {
					return err
				}
				var r struct {
					TokenID      string `json:"token_id"`
					ErrorMessage string `json:"error_message"`
				}
				_ = json.Unmarshal(out, &r)
				if status != http.StatusOK {
					return &exitError{code: exitNo, err: errors.New(r.ErrorMessage)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", r.TokenID)
				return nil
			}
			ctx := context.Background()
			st, dir, err := g.localStore(ctx, data)
			if err != nil {
				return err
			}
			defer st.Close()
			id := args[0]
			if t, err := token.Parse(args[0]); err == nil {
				id = t.ID
			}
			if len(id) > audit.MaxFieldBytes {
				return &exitError{code: exitNo, err: errors.New("no such token")}
			}
			rec := audit.Record{Action: "token.revoke", TokenID: id, Result: "revoke requested",
				Explanation: "the operator revoked the token, and every token derived from it, from the command line"}
			err = operatorChange(ctx, cmd, st, dir, rec, true, "INVALID_TOKEN", func() error { return st.Revoke(ctx, id, time.Now()) })
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return &exitError{code: exitNo, err: errors.New("no such token")}
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", id)
			return nil
		},
	}
	revoke.Flags().StringVar(&data, "data", "", "data folder (revoke directly in the store)")
	rcf.register(revoke)
	cmd.AddCommand(req, revoke, newTokenDeriveCmd())
	return cmd
}

// postForToken posts a token request (body, with the --constraints JSON cons when given) to
// the gateway and prints the token as its only line; a refusal is exit 1 with the code and
// message, and names the consent request when the person has yet to answer.
func postForToken(cmd *cobra.Command, cf clientFlags, path string, body map[string]any, cons string) error {
	if cons != "" {
		if !json.Valid([]byte(cons)) {
			return usageErr("--constraints: not JSON")
		}
		body["constraints"] = json.RawMessage(cons)
	}
	parent, _ := body["token"].(string)
	for _, w := range token.RequestWarnings([]byte(cons), parent) {
		fmt.Fprintln(cmd.ErrOrStderr(), "capgate: warning:", w)
	}
	b, _ := json.Marshal(body)
	status, out, err := cf.do("POST", path, b)
	if err != nil {
		return err
	}
	var r struct {
		Token        string          `json:"token"`
		ErrorCode    string          `json:"error_code"`
		ErrorMessage string          `json:"error_message"`
		Consent      *ipc.ConsentRef `json:"consent"`
	}
	_ = json.Unmarshal(out, &r)
	if status != http.StatusOK || r.Token == "" {
		msg := r.ErrorMessage
		if r.Consent != nil {
			msg += " (request " + r.Consent.ID + ": capgate approvals approve " + r.Consent.ID + ")"
		}
		return &exitError{code: exitNo, err: fmt.Errorf("%s: %s", r.ErrorCode, msg)}
	}
	fmt.Fprintln(cmd.OutOrStdout(), r.Token)
	return nil
}

func newTokenDeriveCmd() *cobra.Command {
	var cf clientFlags
	var caps, reason, cons, duration string
	var maxUses int64
	cmd := &cobra.Command{
		Use:   "derive TOKEN --capabilities LIST [--max-uses N] [--duration D] [--reason TEXT] [--constraints JSON]",
		Short: "Derive a narrower token from one of this client's tokens and print it (its only line)",
		Long: `Derive a child token from TOKEN (attenuation): it may grant only what TOKEN grants, expire
no later, allow no more uses, and its constraints are added to TOKEN's (paths and commands
within TOKEN's, denied lists kept). No consent is asked: the child can do nothing its parent
cannot. Its uses count against the parent, and revoking the parent revokes it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"token": args[0], "capabilities": splitList(caps), "max_uses": maxUses, "reason": reason}
			if duration != "" {
				secs, err := parseDuration(duration)
				if err != nil {
					return usageErr("--duration: %v", err)
				}
				body["duration"] = secs
			}
			return postForToken(cmd, cf, "/v1/tokens/derive", body, cons)
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&caps, "capabilities", "", "comma-separated grants, each within a grant of TOKEN")
	cmd.Flags().Int64Var(&maxUses, "max-uses", 0, "most uses (0: the parent's limit)")
	cmd.Flags().StringVar(&duration, "duration", "", "how long the child lives (default: until the parent expires)")
	cmd.Flags().StringVar(&reason, "reason", "", "why; recorded as the child's audit tag")
	cmd.Flags().StringVar(&cons, "constraints", "", `constraints JSON added to the parent's, e.g. {"allowed_paths":["/home/me/docs/**"]}`)
	return cmd
}

func parseDuration(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, errors.New("must be seconds or a duration such as 30m")
	}
	return int64(d / time.Second), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// envelope wraps a request body in the IPC header.
func envelope(body map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"header": map[string]any{"msg_type": ipc.MsgRequest, "version": ipc.Version,
		"request_id": fmt.Sprintf("req_cli_%d", time.Now().UnixNano()), "timestamp": time.Now().Unix()}, "body": body})
	return b
}

// callEnvelope is the envelope of an execute call; params must be a JSON object ("" is {}).
func callEnvelope(app, method, params, tok string) ([]byte, error) {
	if params == "" {
		params = "{}"
	}
	if !json.Valid([]byte(params)) {
		return nil, usageErr("--params: not JSON")
	}
	body := map[string]any{"action": "execute", "app": app, "method": method, "params": json.RawMessage(params)}
	if tok != "" {
		body["capability_token"] = tok
	}
	return envelope(body), nil
}

func newCallCmd() *cobra.Command {
	var cf clientFlags
	var params, tok string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "call APP METHOD [--params JSON] [--token TOKEN] [--json]",
		Short: "Call a capability through the gateway",
		Long: `Call a capability through the gateway's IPC API. With --json, print the response envelope.
Exit 0 on success, 1 when the gateway refuses or the capability fails.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := callEnvelope(args[0], args[1], params, tok)
			if err != nil {
				return err
			}
			_, out, err := cf.do("POST", "/v1/ipc", b)
			if err != nil {
				return err
			}
			var resp ipc.Response
			if err := json.Unmarshal(out, &resp); err != nil {
				return &exitError{code: exitNo, err: errors.New("the gateway's answer is not an envelope")}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				_ = writeJSON(w, resp)
			} else if resp.Body.Status == "success" {
				fmt.Fprintln(w, string(resp.Body.Result))
				if resp.Body.UndoToken != "" {
					fmt.Fprintf(w, "undo token: %s\n", resp.Body.UndoToken)
				}
			} else {
				fmt.Fprintf(w, "%s: %s\n", resp.Body.ErrorCode, resp.Body.ErrorMessage)
			}
			if resp.Body.Status != "success" {
				return said
			}
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&params, "params", "", "params JSON object")
	cmd.Flags().StringVar(&tok, "token", "", "capability token")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the response envelope")
	return cmd
}

func newExplainCmd() *cobra.Command {
	var cf clientFlags
	var params, tok string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain APP METHOD [--params JSON] [--token TOKEN] [--json]",
		Short: "Show what a call would get and why, with no side effect",
		Long: `Ask the gateway what a call would get (allow, ask, handoff or deny, with its code) and why,
step by step, without taking a use of the token, asking anyone, recording or running anything.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := callEnvelope(args[0], args[1], params, tok)
			if err != nil {
				return err
			}
			status, out, err := cf.do("POST", "/v1/explain", b)
			if err != nil {
				return err
			}
			var d struct {
				Outcome     string   `json:"outcome"`
				Code        string   `json:"code"`
				Explanation string   `json:"explanation"`
				Step        int      `json:"step"`
				Trace       []string `json:"trace"`
			}
			if status != http.StatusOK || json.Unmarshal(out, &d) != nil {
				return &exitError{code: exitNo, err: fmt.Errorf("the gateway refused the question (HTTP %d)", status)}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, d)
			}
			fmt.Fprintf(w, "%s", d.Outcome)
			if d.Code != "" {
				fmt.Fprintf(w, " (%s)", d.Code)
			}
			fmt.Fprintf(w, ": %s\n", d.Explanation)
			for _, line := range d.Trace {
				fmt.Fprintf(w, "  %s\n", line)
			}
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&params, "params", "", "params JSON object")
	cmd.Flags().StringVar(&tok, "token", "", "capability token")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newUndoCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "undo UNDO_TOKEN",
		Short: "Undo a call within its undo window",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := envelope(map[string]any{"action": "undo", "undo_token": args[0]})
			_, out, err := cf.do("POST", "/v1/ipc", b)
			if err != nil {
				return err
			}
			var resp ipc.Response
			if err := json.Unmarshal(out, &resp); err != nil {
				return &exitError{code: exitNo, err: errors.New("the gateway's answer is not an envelope")}
			}
			if resp.Body.Status != "success" {
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %s", resp.Body.ErrorCode, resp.Body.ErrorMessage)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "undone")
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}

func newApprovalsCmd(g *globals) *cobra.Command {
	var data, server string
	var asJSON, remember bool
	cmd := &cobra.Command{
		Use:   "approvals list|show|approve|deny|cancel [ID]",
		Short: "Answer the consent requests waiting for you",
		Long: `List, show and answer the consent requests the gateway holds for the person: approve or deny
a pending request, or cancel an irreversible call during its delayed-commit window.
--remember on approve records an act_if_agreed mandate with the request's wording.
With the gateway's URL (--server, or $CAPGATE_SERVER), list and show print each request's own
page on the approval page, URL/ui/requests/ID.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || (args[0] == "list" && len(args) != 1) || (args[0] != "list" && len(args) != 2) {
				return usageErr("usage: capgate approvals list | show ID | approve ID | deny ID | cancel ID")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := context.Background()
			st, dir, err := g.localStore(ctx, data)
			if err != nil {
				return err
			}
			defer st.Close()
			cs := consent.New(st, &consent.Options{Surface: true})
			pages, err := newApprovalPages(server)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			by := approver()
			var aerr error
			switch args[0] {
			case "list":
				list, err := cs.List(ctx, store.ConsentPending)
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]consentView, 0, len(list))
					for _, c := range list {
						_, r, err := cs.Get(ctx, c.ID)
						if err != nil {
							return err
						}
						out = append(out, newConsentView(c, r, pages.of(c.ID)))
					}
					return writeJSON(w, out)
				}
				for _, c := range list {
					_, r, _ := cs.Get(ctx, c.ID)
					fmt.Fprint(w, consentLines(c, r, time.Now()))
					if u := pages.of(c.ID); u != "" {
						fmt.Fprintf(w, "  answer at %s\n", u)
					}
				}
				if len(list) == 0 {
					fmt.Fprintln(w, "no pending requests")
				}
				return nil
			case "show":
				c, r, err := cs.Get(ctx, args[1])
				if err != nil {
					return &exitError{code: exitNo, err: err}
				}
				return writeJSON(w, newConsentView(c, r, pages.of(c.ID)))
			case "approve", "deny", "cancel":
				_, r, err := cs.Get(ctx, args[1])
				if err != nil {
					return &exitError{code: exitNo, err: err}
				}
				aerr = answerRecorded(ctx, cmd, st, dir, by, cs, args[0], args[1], r, remember)
			default:
				return usageErr("unknown approvals command %q", args[0])
			}
			if aerr != nil {
				return &exitError{code: exitNo, err: aerr}
			}
			if asJSON {
				// The request as it stands now, answered.
				c, r, err := cs.Get(ctx, args[1])
				if err != nil {
					return err
				}
				return writeJSON(w, newConsentView(c, r, pages.of(c.ID)))
			}
			fmt.Fprintf(w, "%s: %s\n", args[1], map[string]string{"approve": "approved", "deny": "denied", "cancel": "cancelled"}[args[0]])
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (with approve, deny and cancel: the request as answered)")
	cmd.Flags().BoolVar(&remember, "remember", false, "with approve: remember the agreement (act_if_agreed)")
	cmd.Flags().StringVar(&server, "server", "", "the gateway's URL, to print each request's page (default $CAPGATE_SERVER)")
	return cmd
}

func newAuditCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Verify, tail and export the tamper-evident audit log"}
	var data string
	var asJSON bool
	verify := newAuditVerifyCmd(g)

	var n int
	tail := &cobra.Command{
		Use:   "tail [-n N] [--json] [--data DIR]",
		Short: "Print the last records of the audit log",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			st, _, err := g.localStore(ctx, data)
			if err != nil {
				return err
			}
			defer st.Close()
			entries, err := audit.Tail(ctx, st, n)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, entries)
			}
			for _, e := range entries {
				r := e.Record
				fmt.Fprintf(w, "%d  %s  %-8s %-7s %-18s client %s  %s %s/%s  %s\n", e.Seq, time.Unix(r.Timestamp, 0).UTC().Format(time.RFC3339),
					r.Kind, r.Decision, orNone(r.Code), orNone(r.ClientID), r.Action, orNone(r.App), orNone(r.Method), r.Result)
			}
			return nil
		},
	}
	tail.Flags().IntVarP(&n, "lines", "n", 20, "how many records")
	tail.Flags().StringVar(&data, "data", "", "data folder")
	tail.Flags().BoolVar(&asJSON, "json", false, "print as JSON")

	var from, to int64
	export := &cobra.Command{
		Use:   "export [--from SEQ] [--to SEQ] [--data DIR]",
		Short: "Write the audit log as JSON lines (seq, prev_hash, hash, at, record), each checkpoint on a line of its own (verify --export checks the file)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			st, _, err := g.localStore(ctx, data)
			if err != nil {
				return err
			}
			defer st.Close()
			return audit.Export(ctx, st, cmd.OutOrStdout(), from, to)
		},
	}
	export.Flags().Int64Var(&from, "from", 1, "first record")
	export.Flags().Int64Var(&to, "to", 0, "last record (0: the end)")
	export.Flags().StringVar(&data, "data", "", "data folder")
	cmd.AddCommand(verify, tail, export, newAuditWitnessCmd(), newAuditPublicKeyCmd(g))
	return cmd
}

func newAppCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "app", Short: "Register apps with the gateway"}
	var data, alias, trusted string
	reg := &cobra.Command{
		Use:   "register MANIFEST [--alias NAME] [--data DIR]",
		Short: "Register an app from its manifest: Tier 1 when its signature verifies, else Tier 2",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir(data)
			if err != nil {
				return err
			}
			l, err := g.load(hostFlags{trustedDir: trusted})
			if err != nil {
				return err
			}
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr("%w", err)
			}
			ctx := context.Background()
			gw, err := gateway.Open(ctx, gateway.Config{DataDir: dir, TrustedDir: l.trustedDir})
			if err != nil {
				return err
			}
			defer gw.Close()
			register := func() (registry.App, error) {
				return gw.Registry.Register(ctx, raw, alias)
			}
			var app registry.App
			// A manifest that names its app is registered with its records in the audit log,
			// and not unrecorded; one that does not even parse is refused by Register as it is,
			// having changed nothing.
			if id, ok := appIDOf(raw, manifest.IsYAML(args[0])); ok {
				rec := audit.Record{Action: "app.register", App: id, Result: "register requested",
					Explanation: "the operator registered the app from its manifest from the command line: Tier 1 when its signature verifies, else Tier 2"}
				err = operatorChange(ctx, cmd, gw.Store, dir, rec, false, "INVALID_REQUEST", func() error {
					app, err = register()
					return err
				})
			} else {
				app, err = register()
			}
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s registered as %q at Tier %d (%s)\n", app.ID, app.Alias, app.Tier, app.Reason)
			return nil
		},
	}
	reg.Flags().StringVar(&data, "data", "", "data folder")
	reg.Flags().StringVar(&alias, "alias", "", "short name agents use for the app (default: the app id's last label)")
	reg.Flags().StringVar(&trusted, "trusted-dir", "", "folder of trusted app keys")
	cmd.AddCommand(reg)
	return cmd
}

// operatorChange makes a change from the command line directly in the data folder's store,
// recorded in its audit log before and after (gateway.OperatorLog.ChangeThen), by approver().
// A change that fails because what it names does not exist is recorded with notFound.
func operatorChange(ctx context.Context, cmd *cobra.Command, st store.Audit, dir string, rec audit.Record, narrows bool,
	notFound string, change func() error) error {
	return recordedChange(ctx, cmd, st, dir, rec, narrows, notFound, func(*audit.Record) error { return change() })
}

// recordedChange is operatorChange for a change that fills in its outcome record
// (gateway.OperatorLog.ChangeThen).
func recordedChange(ctx context.Context, cmd *cobra.Command, st store.Audit, dir string, rec audit.Record, narrows bool,
	notFound string, change func(out *audit.Record) error) error {
	l := gateway.OpenOperatorLog(st, dir, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	warn := func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "capgate: %s: %v\n", rec.Action, err) }
	err := l.ChangeThen(ctx, approver(), rec, narrows, change, operator.CodeOf(notFound), warn)
	if cerr := l.Close(); cerr != nil {
		warn(cerr)
	}
	return err
}

// pluginChange is recordedChange for a plugin command, which works on the data folder's
// lockfile and needs no store: with a store in the folder (a gateway ran on it), the change
// is recorded in its audit log, and a widening is not made unrecorded; with none, there is no
// log to record in, and the change is made as it is (the gateway, once it runs, serves what
// the lockfile holds).
func pluginChange(cmd *cobra.Command, g *globals, hf hostFlags, rec audit.Record, narrows bool,
	change func(out *audit.Record) error) error {
	ctx := context.Background()
	l, err := g.load(hf)
	if err != nil {
		return err
	}
	st, err := gateway.OpenStore(ctx, l.dataDir, l.store, false)
	if errors.Is(err, gateway.ErrNoStore) {
		return change(&rec)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return recordedChange(ctx, cmd, st, l.dataDir, rec, narrows, "INVALID_REQUEST", change)
}

// answerRecorded answers the consent request id (verb approve, deny or cancel) as by, with
// its records in the audit log: an approval is not given unrecorded, a denial or a
// cancellation is.
func answerRecorded(ctx context.Context, cmd *cobra.Command, st store.Store, dir, by string, cs *consent.Service,
	verb, id string, r consent.Request, remember bool) error {
	rec := audit.Record{Action: "consent." + verb, ConsentID: id, Capability: r.CapabilityID, Permission: r.Permission,
		Result: verb + " requested", Explanation: "the person answered the consent request from the command line: " + verb}
	if verb == "approve" && remember {
		rec.Explanation += ", remembering the agreement as an act_if_agreed mandate for the permission"
	}
	return operatorChange(ctx, cmd, st, dir, rec, verb != "approve", "INVALID_REQUEST", func() error {
		switch verb {
		case "approve":
			return cs.Approve(ctx, id, by, remember)
		case "deny":
			return cs.Deny(ctx, id, by)
		}
		return cs.Cancel(ctx, id, by)
	})
}

// appIDOf is the app id a manifest names, when it parses.
func appIDOf(raw []byte, yaml bool) (string, bool) {
	parse := manifest.Parse
	if yaml {
		parse = manifest.ParseYAML
	}
	doc, err := parse(raw)
	if err != nil || doc.Manifest() == nil || len(doc.Manifest().AppID) > audit.MaxFieldBytes {
		return "", false
	}
	return string(doc.Manifest().AppID), doc.Manifest().AppID != ""
}
