package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure capgate's hot paths on this machine",
	}
	cmd.AddCommand(newBenchManifestCmd())
	return cmd
}

func newBenchManifestCmd() *cobra.Command {
	var opts bench.ManifestOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "manifest [--caps N] [--json]",
		Short: "Time loading and verifying a signed manifest, stage by stage",
		Long: `Generate a manifest of N capabilities, sign it, and time loading and verifying it: the
strict parse, decoding and the static rules, canonicalization, compiling every schema, and the
signature check, each the median of many runs on one core. The floor beside it is decoding the
same bytes with encoding/json plus one ed25519.Verify. The manifest document's budget is 50 ms.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Caps < 1 || opts.Caps > 1024 {
				return usageErr("--caps: must be between 1 and 1024")
			}
			r, err := bench.Manifest(opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, r)
			}
			fmt.Fprintf(w, "manifest of %d capabilities, %d bytes, median of %d runs\n", r.Caps, r.Bytes, r.Iterations)
			fmt.Fprintf(w, "  parse (strict JSON)       %9.1f µs\n", r.ParseUS)
			fmt.Fprintf(w, "  decode and rules          %9.1f µs\n", r.DecodeUS)
			fmt.Fprintf(w, "  canonicalize (RFC 8785)   %9.1f µs\n", r.CanonUS)
			fmt.Fprintf(w, "  schema compile            %9.1f µs\n", r.CompileUS)
			fmt.Fprintf(w, "  signature check           %9.1f µs\n", r.SignatureUS)
			fmt.Fprintf(w, "  load and verify, total    %9.1f µs\n", r.TotalUS)
			fmt.Fprintf(w, "  floor (json + 1 verify)   %9.1f µs\n", r.FloorUS)
			fmt.Fprintf(w, "  ratio to floor            %9.2fx\n", r.RatioToFloor)
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Caps, "caps", 100, "capabilities in the generated manifest")
	cmd.Flags().IntVar(&opts.Iterations, "iterations", 0, "measured runs (default: as many as fit in one second)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
