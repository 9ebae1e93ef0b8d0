package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

func newPluginCmd(g *globals) *cobra.Command {
	var hf hostFlags
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Install, upgrade, approve, list and remove plugins under the lockfile",
		Long: `A plugin is a folder or a .tar.gz holding its signed manifest.json and its content (a
manifest.yaml is refused: sign it first with capgate manifest sign -o manifest.json
manifest.yaml, and leave the YAML out of the package). capgate verifies its signature,
recomputes its content digest, checks its intents and its ports against the host, and
compares it with what the lockfile (capgate.lock in the data folder) holds. A narrowing applies; a widening waits for approval (--approve after reading the
diff, or capgate plugin approve later); a reject is refused and the lock stays as it was.

A capability provider's package holds its program, the executable file "provider" at its root.
The install keeps a read-only copy of the package in the data folder (DATA/packages), and
capgate serve runs that copy in a sandbox. Before the lock changes, the conformance suite each
capability names (looked up in ports_dir's kit index) runs against the program, started from
that copy, in dry runs where the capability has one: a failing suite refuses the install or
upgrade, naming the case. capgate plugin test runs them again.

  capgate plugin digest ./my-plugin               the digest to declare in the manifest
  capgate plugin install ./my-plugin              a new plugin is a widening: review it
  capgate plugin install --approve ./my-plugin
  capgate plugin upgrade ./my-plugin-1.1.tar.gz
  capgate plugin approve org.example.kb           approve the pending widening
  capgate plugin list                             installed plugins, working or not, and why
  capgate plugin test org.example.kb              run its conformance suites again
  capgate plugin remove org.example.kb`,
	}
	cmd.PersistentFlags().StringVar(&hf.dataDir, "data-dir", "", "data folder holding capgate.lock (default $CAPGATE_DATA_DIR, else $XDG_DATA_HOME/capgate)")
	cmd.PersistentFlags().StringVar(&hf.trustedDir, "trusted-dir", "", "folder of trusted public keys (default /etc/portal/keys/trusted)")
	cmd.PersistentFlags().StringVar(&hf.sandboxRoot, "sandbox-root", "", "the sandbox root filesystem intents must lie in (default /sandbox)")
	cmd.PersistentFlags().StringVar(&hf.sandbox, "sandbox", "", "how a provider runs for its conformance suites: on (default) or off-unsafe")
	cmd.AddCommand(
		newPluginInstallCmd(g, &hf, false), newPluginInstallCmd(g, &hf, true),
		newPluginApproveCmd(g, &hf), newPluginListCmd(g, &hf), newPluginRemoveCmd(g, &hf),
		newPluginDigestCmd(), newPluginTestCmd(g, &hf),
	)
	return cmd
}

func newPluginInstallCmd(g *globals, hf *hostFlags, upgrade bool) *cobra.Command {
	var approve, asJSON, tier2 bool
	use, short := "install [--approve] SRC", "Install a plugin package (a new plugin is a widening to approve)"
	if upgrade {
		use, short = "upgrade [--approve] SRC", "Upgrade an installed plugin: a narrowing applies, a widening waits for approval"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onPlugins(cmd, *hf, func(ops *operator.Service) error {
				ops.Plugins.AllowTier2Unsafe = tier2
				out, err := ops.InstallPlugin(context.Background(), byTheOperator(), args[0], plugin.Options{Upgrade: upgrade, Approve: approve})
				return reportOutcome(cmd.OutOrStdout(), out, err, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&approve, "approve", false, "approve a widening now (read the diff first)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	cmd.Flags().BoolVar(&tier2, "allow-tier2-unsafe", false, "install even though the signature does not verify against a trusted key")
	return cmd
}

// onPlugins runs fn on the plugin commands' operator Service (pluginService), closing it
// after.
func (g *globals) onPlugins(cmd *cobra.Command, hf hostFlags, fn func(ops *operator.Service) error) error {
	ops, done, err := g.pluginService(cmd, hf)
	if err != nil {
		return err
	}
	defer done()
	return fn(ops)
}

// installErr is a plugin change's error as the command ends with it: exit 1 for a refusal
// (installed already or not installed, nothing pending, a package that is missing or does
// not open), else as it is.
func installErr(err error) error {
	var ae *archive.Error
	switch {
	case errors.Is(err, plugin.ErrInstalled), errors.Is(err, plugin.ErrNotInstalled), errors.Is(err, plugin.ErrNoPending):
		return &exitError{code: exitNo, err: err}
	case errors.As(err, &ae), errors.Is(err, os.ErrNotExist):
		return &exitError{code: exitNo, err: err}
	}
	return err
}

// approver names who approved, for the lock: the local user.
func approver() string {
	if u := os.Getenv("USER"); u != "" {
		return "cli:" + u
	}
	return "cli"
}

// reportOutcome prints the outcome of a plugin change, or ends the command with its error
// (installErr); a change refused or left pending is exit 1.
func reportOutcome(w io.Writer, out plugin.Outcome, err error, asJSON bool) error {
	if err != nil {
		return installErr(err)
	}
	if asJSON {
		if err := writeJSON(w, out); err != nil {
			return err
		}
	} else {
		name := out.AppID
		if out.Version != "" {
			name += " " + out.Version
		}
		for _, p := range out.Problems {
			fmt.Fprintf(w, "%s: %s\n", name, p)
		}
		for _, r := range out.Tests {
			fmt.Fprintf(w, "conformance %s\n", r)
		}
		if len(out.Result.Changes) > 0 || out.Result.Verdict != "" {
			printDiff(w, out.Result)
		}
		switch {
		case out.Refused:
			fmt.Fprintf(w, "%s: refused; the lock is unchanged\n", name)
		case out.Pending:
			fmt.Fprintf(w, "%s: widening pending approval: run 'capgate plugin approve %s' or install again with --approve\n", name, out.AppID)
		case out.Applied:
			fmt.Fprintf(w, "%s: installed (Tier %d, digest %s)\n", name, out.Tier, out.Digest)
		default:
			fmt.Fprintf(w, "%s: unchanged\n", name)
		}
	}
	if out.Refused || out.Pending {
		return said
	}
	return nil
}

func printDiff(w io.Writer, r delta.Result) {
	fmt.Fprintf(w, "verdict: %s\n", r.Verdict)
	for _, reason := range r.Reasons {
		fmt.Fprintf(w, "  reject: %s\n", reason)
	}
	for _, c := range r.Changes {
		mark := "narrowing"
		switch {
		case c.Widening:
			mark = "WIDENING "
		case c.Kind == delta.KindNeutral:
			mark = "neutral  "
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Path, c.Change)
	}
}

func newPluginApproveCmd(g *globals, hf *hostFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "approve APP_ID",
		Short: "Approve the widening pending for a plugin",
		Long: `Approve the widening pending for a plugin. The pending version is compared again with what
is locked now; a reject is still refused.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onPlugins(cmd, *hf, func(ops *operator.Service) error {
				out, err := ops.ApprovePlugin(context.Background(), byTheOperator(), args[0], "")
				return reportOutcome(cmd.OutOrStdout(), out, err, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return cmd
}

func newPluginListCmd(g *globals, hf *hostFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List installed plugins, whether each is working, and pending widenings",
		Long: `List the installed plugins of the lockfile and the widenings pending approval. For a
capability provider, the list says whether its program is working, as the gateway last saw it,
and when it is not, why (its package has no program, its program reports another manifest, it
keeps exiting, ...). --json prints the lock as it is, with "status" beside it.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, f, err := g.pluginLock(*hf)
			if err != nil {
				return err
			}
			status := pluginStatus(g, h, f)
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, struct {
					*lock.File
					Status map[string]pluginState `json:"status,omitempty"`
				}{f, status})
			}
			ids := slices.Sorted(maps.Keys(f.Plugins))
			for _, id := range ids {
				e := f.Plugins[id]
				fmt.Fprintf(w, "%s %s  tier %d  %s  signer %s\n", e.AppID, e.Version, e.Tier, e.Digest, orNone(e.Signer))
				if !plugin.Runs(e) {
					continue
				}
				ps := status[id]
				switch s := ps.Running; {
				case s == nil:
					fmt.Fprintln(w, "  not started yet: a gateway starts it (capgate serve)")
				case s.Working:
					fmt.Fprintf(w, "  working (since %s)\n", s.At.Format(time.RFC3339))
				default:
					fmt.Fprintf(w, "  not working (since %s): %s\n", s.At.Format(time.RFC3339), s.Why)
				}
				for _, r := range ps.Tests {
					fmt.Fprintf(w, "  test %s (%s)\n", r, r.At.Format(time.RFC3339))
				}
			}
			pids := slices.Sorted(maps.Keys(f.Pending))
			for _, id := range pids {
				p := f.Pending[id]
				fmt.Fprintf(w, "%s %s  PENDING approval since %s\n", id, p.Entry.Version, p.Since.Format("2006-01-02 15:04:05Z07:00"))
			}
			if len(ids)+len(pids) == 0 {
				fmt.Fprintln(w, "no plugins installed")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the lock as JSON")
	return cmd
}

// pluginLock is the install host and the lockfile as it is.
func (g *globals) pluginLock(hf hostFlags) (*plugin.Host, *lock.File, error) {
	h, err := g.pluginHost(hf)
	if err != nil {
		return nil, nil, err
	}
	f, err := h.List()
	if err != nil {
		return nil, nil, err
	}
	return h, f, nil
}

// pluginState is what the data folder's store records of an installed plugin: whether its
// provider works (as the gateway last saw it) and its capabilities' test status.
type pluginState struct {
	Running *providers.Status    `json:"running,omitempty"`
	Tests   []conformance.Result `json:"tests,omitempty"`
}

// pluginStatus is the state of each installed plugin as the data folder's store records it:
// none when the folder has no store (no gateway ran on it). Test results of another version
// of the manifest are left out.
func pluginStatus(g *globals, h *plugin.Host, f *lock.File) map[string]pluginState {
	out := map[string]pluginState{}
	_ = g.onStoreIfAny(h.DataDir, func(ctx context.Context, st store.Store) error {
		for id, e := range f.Plugins {
			var ps pluginState
			if s, err := providers.LoadStatus(ctx, st, id); err == nil {
				ps.Running = &s
			}
			if rec, err := conformance.Load(ctx, st, id); err == nil {
				if doc, err := manifest.Parse(e.Manifest); err == nil && rec.Current(doc) {
					ps.Tests = rec.Results
				}
			}
			if ps.Running != nil || ps.Tests != nil {
				out[id] = ps
			}
		}
		return nil
	})
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func newPluginRemoveCmd(g *globals, hf *hostFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "remove APP_ID",
		Short: "Remove an installed plugin and any widening pending for it",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onPlugins(cmd, *hf, func(ops *operator.Service) error {
				if err := ops.RemovePlugin(context.Background(), byTheOperator(), args[0]); err != nil {
					return installErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: removed\n", args[0])
				return nil
			})
		},
	}
}

func newPluginDigestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "digest SRC",
		Short: "Print the content digest of a plugin package, to declare in its manifest",
		Long: `Print the content digest of a plugin package (a folder or a .tar.gz): sha256 over a
deterministic encoding of every file but the manifest. Declare it as "digest" in the manifest
before signing; the host recomputes it at install and refuses a package whose digest differs.
Also prints the digest of each file, for sbom_ref and provenance_ref.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pkg, err := archive.Open(args[0])
			if err != nil {
				return installErr(err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, pkg.Digest())
			for _, f := range pkg.Files {
				fmt.Fprintf(w, "  %s  %s\n", f.Digest, f.Path)
			}
			return nil
		},
	}
}

func newPluginTestCmd(g *globals, hf *hostFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test APP_ID [--json]",
		Short: "Run an installed plugin's conformance suites again, against its program",
		Long: `Run the conformance suites the installed plugin's capabilities name (from ports_dir's kit
index) against its program, started in a sandbox from the package kept at install, in dry runs
where a capability has one. The results are recorded as the capabilities' test status in the
data folder's store, when it has one (capgate plugin list shows them). Exit 1 when a suite did
not pass.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, f, err := g.pluginLock(*hf)
			if err != nil {
				return err
			}
			e, ok := f.Plugins[args[0]]
			if !ok {
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], plugin.ErrNotInstalled)}
			}
			doc, err := manifest.Parse(e.Manifest)
			if err != nil {
				return fmt.Errorf("%s: the locked manifest: %w", args[0], err)
			}
			prog, err := plugin.ProgramOf(h.DataDir, e)
			if err != nil {
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			results, err := h.Test(doc, prog)
			if err != nil {
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			if err := g.onStoreIfAny(h.DataDir, func(ctx context.Context, st store.Store) error {
				return conformance.Save(ctx, st, doc, results)
			}); err != nil {
				warnOn(cmd)("conformance", err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					fmt.Fprintln(w, r)
				}
			}
			for _, r := range results {
				if r.Status.Failed() {
					return said
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}
