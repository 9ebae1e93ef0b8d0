//go:build !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
)

// The sandbox needs Linux; elsewhere Open refuses ModeOn, and these are never reached.

// LandlockABI returns 0: Landlock is Linux's.
func LandlockABI() int { return 0 }

func runInit(initConfig, []string) { initFail("the sandbox runs on Linux only") }

const (
	pidsController   = "pids"
	memoryController = "memory"
)

func sandboxCgroup(Limits) ([]string, error) { return nil, errors.New("cgroups are Linux's") }

func cgroupHeld(string) (string, bool) { return "cgroups are Linux's", false }

// dataFile is never reached where the sandbox cannot enforce: Command runs the program itself.
func dataFile(name string, _ []byte) (*os.File, error) {
	return nil, fmt.Errorf("sandbox: %s: needs Linux", name)
}
