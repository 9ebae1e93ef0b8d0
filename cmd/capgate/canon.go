package main

import (
	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/jcs"
)

func newCanonCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "canon [FILE|-]",
		Short: "Print the RFC 8785 canonical form of a JSON document",
		Long: `Print the RFC 8785 (JSON Canonicalization Scheme) form of any JSON document, read from FILE
or stdin, with no trailing newline. Numbers are read as IEEE 754 doubles, as RFC 8785 says,
so 9007199254740993 is written 9007199254740992.

Input that has no canonical form is refused with an error naming where and why: invalid
JSON, duplicate member names, lone surrogates, invalid UTF-8, numbers that are not finite.
Exit 0 on success, 1 when the input is refused, 2 on a usage error.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args, jcs.DefaultMaxBytes)
			if err != nil {
				return err
			}
			out, err := jcs.Canonicalize(data)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
}
