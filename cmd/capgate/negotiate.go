package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/keys"
)

func newNegotiateCmd(g *globals) *cobra.Command {
	var supports, defsDir, trustedDir, dataDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "negotiate --supports FILE [--definitions DIR] [--json]",
		Short: "Show which definitions a client would be offered, and why each was kept or dropped",
		Long: `Intersect what a client supports with the definitions this host knows, as the gateway does
when a client names what it supports: each name both know is offered at the highest version
both support (the same major, the host's highest minor not above the client's); an extension
whose parent is not offered at a version its extends accepts is dropped, and so are its own
extensions; an entry that is a handle of an assistant ("@...") is never read as a name.

--supports names a JSON or YAML file: a list of "name@major.minor" entries, or an object
whose "supports" member is one. The host's definitions are the signed *.json files of
--definitions, else definitions_dir in the configuration file, else DATA/definitions, each
verified with its namespace's trusted key (--trusted-dir, $CAPGATE_TRUSTED_DIR, trusted_dir,
else /etc/portal/keys/trusted); a file that does not load is reported and left out.

With --json, print {"offered": ["name@major.minor", ...], "choices": [{"name", "client",
"offered", "kept", "why"}], "not_loaded": ["..."]}. Exit 0, or 2 on a usage error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if supports == "" {
				return usageErr("%s: --supports FILE is required", cmd.CommandPath())
			}
			list, err := definition.ReadSupports(supports)
			if err != nil {
				return usageErr("--supports %s: %w", supports, err)
			}
			l, err := g.load(hostFlags{trustedDir: trustedDir, dataDir: dataDir})
			if err != nil {
				return err
			}
			if err := definition.CheckRoot(l.file.DefinitionsRoot); err != nil {
				return usageErr("definitions_root in %s: %w", l.configPath, err)
			}
			dirs := []string{defsDir}
			if defsDir == "" {
				// As capgate serve loads them: the definitions folder, and the definitions
				// of the plugin ports in the ports folder.
				dirs[0] = l.file.DefinitionsDir
				if dirs[0] == "" {
					dirs[0] = filepath.Join(l.dataDir, "definitions")
				}
				if l.file.PortsDir != "" {
					dirs = append(dirs, filepath.Join(l.file.PortsDir, "definitions"))
				}
			}
			set, loadErrs := definition.LoadDirs(dirs, l.file.DefinitionsRoot, keys.TrustStore{Dir: l.trustedDir})
			n := definition.Negotiate(set, list)
			res := struct {
				Offered   []string            `json:"offered"`
				Choices   []definition.Choice `json:"choices"`
				NotLoaded []string            `json:"not_loaded,omitempty"`
			}{Offered: []string{}, Choices: n.Choices}
			if res.Choices == nil {
				res.Choices = []definition.Choice{}
			}
			for _, d := range n.Offered {
				res.Offered = append(res.Offered, d.Ref())
			}
			for _, e := range loadErrs {
				res.NotLoaded = append(res.NotLoaded, e.Error())
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, res)
			}
			for _, e := range res.NotLoaded {
				fmt.Fprintf(cmd.ErrOrStderr(), "not loaded: %s\n", e)
			}
			for _, c := range res.Choices {
				mark := "dropped"
				if c.Kept {
					mark = "kept   "
				}
				fmt.Fprintf(out, "%s %s: %s\n", mark, c.Client, c.Why)
			}
			fmt.Fprintf(out, "offered: %d definition(s)\n", len(res.Offered))
			for _, ref := range res.Offered {
				fmt.Fprintf(out, "  %s\n", ref)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&supports, "supports", "", "JSON or YAML file of the client's name@major.minor entries")
	cmd.Flags().StringVar(&defsDir, "definitions", "", "folder of the host's signed definitions (default DATA/definitions)")
	cmd.Flags().StringVar(&trustedDir, "trusted-dir", "", "folder of trusted public keys (default /etc/portal/keys/trusted)")
	cmd.Flags().StringVar(&dataDir, "data", "", "capgate's data folder (default $XDG_DATA_HOME/capgate)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
