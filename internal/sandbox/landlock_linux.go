package sandbox

import (
	"fmt"
	"os"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// LandlockABI returns the Landlock ABI version this kernel offers (0: none, Landlock is not
// built in or not enabled at boot), for capgate serve to report at start. The init restricts
// the file system to what this version can express, and no more: with 0 the sandbox rests on
// bubblewrap's mount namespace alone.
func LandlockABI() int {
	landlockOnce.Do(func() {
		v, err := ll.LandlockGetABIVersion()
		if err != nil || v < 0 {
			v = 0
		}
		landlockVersion = v
	})
	return landlockVersion
}

var (
	landlockOnce    sync.Once
	landlockVersion int
)

// restrictFiles restricts this process, every thread of it and everything it executes, to the
// paths of c: the same set bubblewrap shows, so that a file the mount namespace shows by
// mistake is still out of reach. Abstract unix sockets and signals are scoped to the sandbox
// too (ABI 6 and later). The network is left to the network namespace (no TCP rule). It is
// best effort: each right the kernel's ABI lacks is dropped, and "refer" (renaming across
// folders) is asked only where the ABI has it, since go-landlock would otherwise give up
// Landlock altogether on ABI 1.
func restrictFiles(c initConfig) error {
	abi := LandlockABI()
	if abi == 0 {
		return nil
	}
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}.BestEffort()
	var rules []landlock.Rule
	add := func(paths []string, dir, file func(...string) landlock.FSRule) error {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if fi.IsDir() {
				rules = append(rules, dir(p))
			} else {
				rules = append(rules, file(p))
			}
		}
		return nil
	}
	refer := func(r landlock.FSRule) landlock.FSRule {
		if abi >= 2 {
			return r.WithRefer()
		}
		return r
	}
	rw := func(ps ...string) landlock.FSRule { return refer(landlock.RWDirs(ps...)).WithResolveUnix() }
	dev := func(ps ...string) landlock.FSRule { return landlock.RWDirs(ps...).WithIoctlDev() }
	devFile := func(ps ...string) landlock.FSRule { return landlock.RWFiles(ps...).WithIoctlDev() }
	sock := func(ps ...string) landlock.FSRule { return landlock.RODirs(ps...).WithResolveUnix() }
	list := func(ps ...string) landlock.FSRule { return landlock.PathAccess(ll.AccessFSReadDir, ps...) }
	for _, step := range []error{
		add(c.ReadOnly, landlock.RODirs, landlock.ROFiles),
		add(c.ReadWrite, rw, landlock.RWFiles),
		add(c.Devices, dev, devFile),
		add(c.Sockets, sock, landlock.ROFiles),
		add(c.Listable, list, list),
	} {
		if step != nil {
			return step
		}
	}
	return cfg.Restrict(rules...)
}
