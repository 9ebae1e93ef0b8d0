package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/web"
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

The terminal's commands, python's scripts and every provider process (the installed plugins of
the lockfile, the apps registered with capgate app register --command) each run in a sandbox of
their own, on bubblewrap (Debian: apt-get install bubblewrap): new user, pid, network and ipc
namespaces, no network, the system's programs read-only, and nothing of the data folder, the
keys or the configuration; the terminal and python write only the workspace, a provider only
sees its own package, read-only. Without bubblewrap none of them is served (the other apps
are); --sandbox=off-unsafe runs them with capgate's own rights.

capgate serve starts each installed plugin from the copy of its package kept in the data folder
at install, follows the lockfile (a plugin installed, upgraded or removed from the command line
starts or stops within a second), and restarts a provider that exits, with backoff.

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
			ceiling, budgets, err := l.ceilings()
			if err != nil {
				return err
			}
			ih, err := l.intentHost()
			if err != nil {
				return err
			}
			creds, err := egressCredentials(l.file.Credentials)
			if err != nil {
				return usageErr("config: %w", err)
			}
			if err := definition.CheckRoot(l.file.DefinitionsRoot); err != nil {
				return usageErr("config: %w", err)
			}
			providerPolicy, err := l.providerPolicy()
			if err != nil {
				return err
			}
			triggerLife, err := l.triggerLifetime()
			if err != nil {
				return err
			}
			every, err := evaluationInterval(l.file.EvaluationInterval)
			if err != nil {
				return usageErr("config: evaluation_interval: %w", err)
			}
			var suites *port.Registry
			if l.file.PortsDir != "" {
				if suites, err = port.LoadDir(l.file.PortsDir); err != nil {
					return fmt.Errorf("ports_dir: %w", err)
				}
			}
			gw, err := gateway.Open(ctx, gateway.Config{DataDir: dir, TimeoutCeiling: ceiling, Resolver: egress.DNSResolver{Server: l.file.EgressResolver}, AllowPrivate: ih.AllowPrivate, Credentials: creds, SandboxRoot: l.file.SandboxRoot, BudgetCeiling: budgets, Store: l.store, Listen: listen, Socket: socket, TrustedDir: l.trustedDir, Logger: logger, Workspace: ws, UIHosts: uiHosts,
				DefinitionsDir: l.file.DefinitionsDir, DefinitionsRoot: l.file.DefinitionsRoot, ProviderPolicy: providerPolicy,
				Suites: suites, EvaluationInterval: every, PortsDir: l.file.PortsDir, TriggerMaxLifetime: triggerLife,
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
					fmt.Fprintf(w, "terminal, python and provider processes NOT served: %v\n", gw.SandboxProblem())
				case mode == sandbox.ModeOffUnsafe:
					fmt.Fprintln(w, "sandbox OFF (--sandbox=off-unsafe): terminal commands, python scripts and provider processes run with capgate's own rights")
				default:
					landlock := "Landlock unavailable"
					if abi := sandbox.LandlockABI(); abi > 0 {
						landlock = fmt.Sprintf("Landlock ABI %d", abi)
					}
					fmt.Fprintf(w, "terminal commands, python scripts, provider processes and stdio tool servers run sandboxed (bubblewrap, seccomp, %s)\n", landlock)
					if how, ok := gw.ProcessLimit(); ok {
						fmt.Fprintf(w, "sandbox process budgets held by %s\n", how)
					} else {
						fmt.Fprintf(w, "sandbox process budgets cannot be held here (%s): a provider that declares one is not started\n", how)
					}
					if how, ok := sandbox.MemoryLimit(); ok {
						fmt.Fprintf(w, "sandbox memory budgets held per process and for the whole sandbox by %s\n", how)
					} else {
						fmt.Fprintf(w, "sandbox memory budgets held %s: a sandbox of N processes may use N times its budget\n", how)
					}
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

// evaluationInterval reads the configuration's evaluation_interval: "" for the gateway's
// default, "off" for never, else a duration of a minute or more.
func evaluationInterval(text string) (time.Duration, error) {
	switch text {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < time.Minute {
		return 0, errors.New(`must be a duration of a minute or more ("6h"), or "off"`)
	}
	return d, nil
}
