package sandbox_test

import (
	"context"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// The cost of a sandboxed start against an unconfined one, side by side: /bin/true, and the
// same with every limit and a proxy (the init stays as a forwarder then).
func BenchmarkStart(b *testing.B) {
	off, _ := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	on := sandboxtest.Open(b)
	limited := shell("true")
	limited.Limits = sandbox.Limits{MemoryBytes: 1 << 30, CPUSeconds: 60, Processes: 64, OpenFiles: 256}
	proxied := shell("true")
	proxied.ProxySocket = "/dev/null"
	for _, c := range []struct {
		name string
		box  *sandbox.Sandbox
		spec sandbox.Spec
	}{
		{"unconfined", off, shell("true")},
		{"sandboxed", on, shell("true")},
		{"sandboxed-limits", on, limited},
		{"sandboxed-proxy", on, proxied},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				cmd, err := c.box.Command(c.spec)
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
