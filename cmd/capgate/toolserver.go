package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

func newToolServerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "toolserver add|list|remove|accept",
		Short: "Put MCP servers behind the gateway, each tool pinned by hash",
		Long: `Put third-party MCP servers behind capgate as Tier 2 apps. capgate is their MCP client: it
lists their tools and offers each accepted tool as the capability tool.mcp.NAME.ACTION, every
call through the gateway's checks, consent and audit, with the output labelled untrusted.

Each accepted tool is pinned by the hash of its name, title, description, schemas and
annotations. When a server changes a tool, the running gateway stops it, writes an audit
record and opens a consent request showing the difference; approving that request, or
capgate toolserver accept, pins it again. A renamed tool is a new tool; a removed tool
disappears.

Until the operator classifies a tool in DATA/toolservers/NAME.overlay.json, for example
  {"search": {"side_effects": "read", "risk": "low"}}
its side effects count as the worst case (system), so every call asks the person. The
server's own annotations (readOnlyHint, ...) are untrusted and never lower that.

A stdio server gets no environment of capgate's but PATH, HOME, LANG and the variables named
by --env; capgate's client keys, tokens and CAPGATE_ variables never reach it.`,
	}
	cmd.AddCommand(newToolServerAddCmd(g), newToolServerListCmd(g), newToolServerRemoveCmd(g), newToolServerAcceptCmd(g))
	return cmd
}

func newToolServerAddCmd(g *globals) *cobra.Command {
	var data, url string
	var env, binds, allow []string
	cmd := &cobra.Command{
		Use:   "add NAME [--data DIR] [--env VAR]... [--bind PATH[:rw]]... [--allow HOST:PORT]... (-- COMMAND ARGS... | --url URL)",
		Short: "Add an MCP server: list its tools, pin them and register its app",
		Long: `Add an MCP server as the Tier 2 app mcp.NAME (alias NAME): a command capgate starts and
speaks to over stdio (after --), or a streamable HTTP endpoint (--url). capgate connects once,
lists the tools and pins every one whose schema compiles: adding a server accepts the tools
it offers now. With a gateway serving the data folder, the gateway adds it and has connected
it when the command returns; otherwise it goes in the folder's store, and a gateway starts it
when it runs.

A stdio server runs in a sandbox of its own (bubblewrap): it sees the system's libraries and
its program read-only, the folders given with --bind (read-only, or read-write with :rw), a
private /tmp as its HOME, and nothing else of the machine: not capgate's data folder, keys or
configuration; it has no network but, with --allow HOST:PORT, capgate's egress proxy to those
destinations alone. HTTP_PROXY is set for it, and a server that ignores it (Node's fetch
does) still reaches each declared name: the sandbox's /etc/hosts maps the name to its own
loopback, where capgate carries the connection to the proxy. Each name is resolved once by
capgate (egress_resolver in the configuration file names the DNS server; the default is
/etc/resolv.conf's) and no special-purpose or private address is ever reached unless the
host's signed policy allows it. Without a running gateway, the server is started to list its
tools with no network at all. A server written in an interpreted language needs
the folder of its scripts bound:

  capgate toolserver add files --bind /opt/mcp/files -- node /opt/mcp/files/index.js

NAME is lowercase letters, digits and '-', starting with a letter, at most 32 bytes.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != -1 && cmd.ArgsLenAtDash() != 1 || len(args) < 1 {
				return usageErr("usage: capgate toolserver add NAME -- COMMAND ARGS... | capgate toolserver add NAME --url URL")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c := toolserver.Config{Name: args[0], URL: url, Env: env, Allow: allow}
			for _, b := range binds {
				abs := b
				if p, mode, ok := strings.Cut(b, ":"); ok {
					if p, err := filepath.Abs(p); err == nil {
						abs = p + ":" + mode
					}
				} else if p, err := filepath.Abs(b); err == nil {
					abs = p
				}
				bind, err := toolserver.ParseBind(abs)
				if err != nil {
					return usageErr("--bind %s: %w", b, err)
				}
				if fi, err := os.Stat(bind.Path); err != nil || !fi.IsDir() {
					return usageErr("--bind %s: not a folder", b)
				}
				c.Bind = append(c.Bind, bind)
			}
			if len(args) > 1 {
				if cmd.ArgsLenAtDash() != 1 {
					return usageErr("the server's command goes after --")
				}
				c.Command, c.Args = args[1], args[2:]
			}
			if err := c.Validate(); err != nil {
				return usageErr("%w", err)
			}
			dir, err := g.dataDir(data)
			if err != nil {
				return err
			}
			return g.onChanges(cmd, changeTarget{data: data}, func(ctx context.Context, ch *changes) error {
				r, err := ch.AddToolServer(ctx, byTheOperator(), c)
				if err != nil {
					return &exitError{code: exitNo, err: err}
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "added the tool server %s as the app %s (alias %s): %d tools accepted and pinned\n", c.Name, r.AppID, c.Name, len(r.Accepted))
				fmt.Fprintf(w, "  MCP revision: %s\n", r.Revision)
				printPins(w, r.AppID, r.Accepted)
				printLeft(w, r)
				fmt.Fprintf(w, "side effects count as system until classified in %s\n", toolserver.OverlayFile(dir, c.Name))
				if ch.viaGateway {
					fmt.Fprintln(w, "the running gateway has started the server")
				} else {
					fmt.Fprintln(w, "a running gateway starts the server within a second")
					if len(c.Allow) > 0 {
						fmt.Fprintln(w, "no gateway runs: the server listed its tools with no network; its --allow destinations are reached through the gateway's egress proxy")
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().StringVar(&url, "url", "", "the server's streamable HTTP endpoint")
	cmd.Flags().StringSliceVar(&env, "env", nil, "a variable of capgate's environment the server may see (repeatable)")
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "a destination HOST:PORT the stdio server may reach through capgate's egress proxy (repeatable)")
	cmd.Flags().StringArrayVar(&binds, "bind", nil, "a folder the stdio server sees in its sandbox, PATH or PATH:rw (repeatable)")
	return cmd
}

func printPins(w io.Writer, appID string, pins []toolserver.Pin) {
	for _, p := range pins {
		fmt.Fprintf(w, "  %-24s tool.%s.%s  %s\n", p.Tool, appID, p.Action, p.Hash)
	}
}

func printLeft(w io.Writer, r toolserver.Report) {
	for _, p := range r.Left {
		fmt.Fprintf(w, "  left out: %s\n", p)
	}
	if r.Cut {
		fmt.Fprintf(w, "  left out: the server lists more than %d tools\n", toolserver.MaxTools)
	}
}

// toolServerJSON is one tool server in list --json.
type toolServerJSON struct {
	toolserver.Config
	AppID string `json:"app_id"`
	// Revision is the MCP revision capgate last spoke to the server; nil before it recorded one.
	Revision *toolserver.Revision `json:"revision,omitempty"`
	Tools    []toolJSON           `json:"tools"`
}

type toolJSON struct {
	Tool       string `json:"tool"`
	Capability string `json:"capability"`
	Hash       string `json:"hash"`
}

func newToolServerListCmd(g *globals) *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--data DIR] [--json]",
		Short: "List the tool servers and their pinned tools",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				cfgs, err := toolserver.ListConfigs(ctx, st)
				if err != nil {
					return err
				}
				out := []toolServerJSON{}
				for _, c := range cfgs {
					pins, err := toolserver.LoadPins(ctx, st, c.Name)
					if err != nil {
						return err
					}
					s := toolServerJSON{Config: c, AppID: c.AppID(), Tools: []toolJSON{}}
					if rev, ok, err := toolserver.LoadRevision(ctx, st, c.Name); err != nil {
						return err
					} else if ok {
						s.Revision = &rev
					}
					for _, p := range pins {
						s.Tools = append(s.Tools, toolJSON{Tool: p.Tool, Capability: "tool." + c.AppID() + "." + p.Action, Hash: p.Hash})
					}
					out = append(out, s)
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, out)
				}
				if len(out) == 0 {
					fmt.Fprintln(w, "no tool servers")
				}
				for _, s := range out {
					where := s.URL
					if where == "" {
						where = strings.Join(append([]string{s.Command}, s.Args...), " ")
					}
					fmt.Fprintf(w, "%s  %s  %s  (%d tools pinned)\n", s.Name, s.AppID, where, len(s.Tools))
					rev := toolserver.Revision{}
					if s.Revision != nil {
						rev = *s.Revision
					}
					fmt.Fprintf(w, "  MCP revision: %s\n", rev)
					if reach := s.Reach(); reach != "" {
						fmt.Fprintf(w, "  %s\n", reach)
					}
					for _, t := range s.Tools {
						fmt.Fprintf(w, "  %-24s %s  %s\n", t.Tool, t.Capability, t.Hash)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine output")
	return cmd
}

func newToolServerRemoveCmd(g *globals) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "remove NAME [--data DIR]",
		Short: "Remove a tool server, its app and its pins",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onChanges(cmd, changeTarget{data: data}, func(ctx context.Context, ch *changes) error {
				if err := ch.RemoveToolServer(ctx, byTheOperator(), args[0]); err != nil {
					if errors.Is(err, toolserver.ErrNotToolServer) {
						return &exitError{code: exitNo, err: err}
					}
					return err
				}
				if ch.viaGateway {
					fmt.Fprintf(cmd.OutOrStdout(), "removed the tool server %s; the running gateway has stopped it\n", args[0])
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "removed the tool server %s; a running gateway stops it within a second\n", args[0])
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	return cmd
}

func newToolServerAcceptCmd(g *globals) *cobra.Command {
	var data string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "accept NAME [TOOL...] [--data DIR] [--dry-run]",
		Short: "Show how a server's tools differ from their pins, and pin the changed and new ones",
		Long: `Connect to the tool server, list its tools and show how each differs from its pin (as JSON
lines: - the pinned value, + the new one). Then pin the changed and new tools named (every
one when none is named), drop the pins of removed tools, and record their open consent
requests as approved. --dry-run shows and changes nothing. Naming a tool that is neither
changed nor new is refused (exit 1) and nothing is accepted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageErr("usage: capgate toolserver accept NAME [TOOL...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onChanges(cmd, changeTarget{data: data}, func(ctx context.Context, ch *changes) error {
				// An accepted tool runs again: the acceptance is recorded before it is made, and
				// not made unrecorded (a dry run changes and records nothing).
				r, err := ch.AcceptTools(ctx, byTheOperator(), args[0], args[1:], dryRun)
				w := cmd.OutOrStdout()
				for _, c := range r.Changes {
					if c.Kind == toolserver.Same {
						continue
					}
					fmt.Fprintf(w, "%s: %s\n", c.Tool, c.Kind)
					for _, l := range c.Lines {
						fmt.Fprintf(w, "    %s\n", l)
					}
				}
				if err != nil {
					if errors.Is(err, toolserver.ErrNothingToAccept) || errors.Is(err, toolserver.ErrNotToolServer) {
						return &exitError{code: exitNo, err: err}
					}
					return err
				}
				printLeft(w, r)
				fmt.Fprintf(w, "MCP revision: %s\n", r.Revision)
				if dryRun {
					fmt.Fprintln(w, "dry run: nothing accepted")
					return nil
				}
				if len(r.Accepted) == 0 {
					fmt.Fprintln(w, "nothing to accept: every tool matches its pin")
					return nil
				}
				fmt.Fprintf(w, "accepted and pinned %d tools:\n", len(r.Accepted))
				printPins(w, r.AppID, r.Accepted)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the differences and accept nothing")
	return cmd
}
