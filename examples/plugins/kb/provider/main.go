// Command provider is the example knowledge-base provider: package kb's handler served as a
// provider process with sdk/provider. It reads its signed manifest and its index from its
// package folder (kb.FindRoot) and reaches nothing else. capgate starts it; started by hand,
// it says so and exits.
package main

import (
	"fmt"
	"os"

	"github.com/capgate/capgate/examples/plugins/kb"
	"github.com/capgate/capgate/sdk/provider"
)

func main() {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kb: the working folder:", err)
		os.Exit(1)
	}
	root, err := kb.FindRoot(wd, os.Args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h, err := kb.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	provider.Serve(h)
}
