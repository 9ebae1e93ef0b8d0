//go:build linux

package terminal

import (
	"os"
	"syscall"
	"unsafe"
)

// supported says that commands run here.
const supported = true

// sysProcAttr puts a command in a session, and so a process group, of its own, with no
// controlling terminal (it cannot read the operator's tty or prompt on it), and asks the kernel
// to kill it should the capgate thread that started it die. PDEATHSIG reaches only the
// command's own process; whatever it starts is killed with its group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// pPID is waitid's idtype P_PID.
const pPID = 1

// waitExited blocks until the process pid has exited, without reaping it. While it is an
// unreaped zombie, its pid (and so its process group id) cannot be reused, so killGroup after
// it reaches the command's group and nothing else.
func waitExited(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return e
	}
}

// killGroup sends SIGKILL to every process of the group pgid.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// exitCode is the command's exit status, or 128 and the signal's number when a signal ended
// it, as shells report it.
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
