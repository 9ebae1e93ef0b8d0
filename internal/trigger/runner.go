package trigger

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
)

// An engine names itself in the firings it takes: "eng_", a random part, and, where it can
// tell, its host's name, its process id and its process's start time, "host/pid/start". An
// engine on the same host that finds a firing taken by a process that is no longer running
// (a kill -9, a crash) takes it up at once instead of waiting for its lease to run out; an
// engine on another host, or one that cannot tell, waits for the lease.

// newInstance returns this engine's name.
func newInstance() string {
	var b [8]byte
	rand.Read(b[:])
	id := "eng_" + hex.EncodeToString(b[:])
	host, err := os.Hostname()
	if start, ok := procStart(os.Getpid()); err == nil && ok && !strings.Contains(host, "/") {
		id += "/" + host + "/" + strconv.Itoa(os.Getpid()) + "/" + start
	}
	return id
}

// gone reports whether the engine named runner is known to have stopped: it ran on this
// host, and its process is not running (or another process has its id since).
func gone(runner string) bool {
	parts := strings.Split(runner, "/")
	if len(parts) != 4 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != parts[1] {
		return false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil || pid <= 0 {
		return false
	}
	start, ok := procStart(pid)
	if !ok {
		_, err := os.Stat("/proc/self/stat")
		return err == nil // /proc is there and the process is not
	}
	return start != parts[3]
}

// procStart is the start time of process pid, as /proc/PID/stat's 22nd field says it
// (clock ticks since boot); false where there is no /proc or no such process.
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command's name, in parentheses, may hold spaces: the fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", false
	}
	return f[19], true // field 22 of the whole line: 3 is f[0]
}
