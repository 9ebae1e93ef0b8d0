//go:build !linux

package terminal

import (
	"errors"
	"os"
	"syscall"
)

// supported says that commands run here: they do not. The terminal relies on Linux's waitid
// without reaping, sessions and PDEATHSIG to kill a command's whole process tree and nothing
// else; rather than run commands it cannot stop, New fails.
const supported = false

func sysProcAttr() *syscall.SysProcAttr { return nil }

func waitExited(int) error { return errors.ErrUnsupported }

func killGroup(int) {}

func exitCode(st *os.ProcessState) int { return st.ExitCode() }
