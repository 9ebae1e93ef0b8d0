package python

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// limitProcess bounds the sandbox process before it runs a script: no core dumps, no file
// written (RLIMIT_FSIZE 0; pipes are not files), CPU time a little above the timeout, and
// twice MaxMemoryBytes of data memory beyond what the process maps already. A limit the process
// cannot set (a hard limit below it) is left as it is.
func limitProcess(timeout time.Duration) {
	set := func(res int, v uint64) {
		var cur syscall.Rlimit
		if syscall.Getrlimit(res, &cur) != nil {
			return
		}
		v = min(v, cur.Max)
		_ = syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v})
	}
	set(syscall.RLIMIT_CORE, 0)
	set(syscall.RLIMIT_FSIZE, 0)
	set(syscall.RLIMIT_CPU, uint64(timeout/time.Second)+2)
	if data, ok := vmData(); ok {
		set(syscall.RLIMIT_DATA, data+2*MaxMemoryBytes)
	}
}

// vmData is the process's data memory in bytes, as Linux counts it for RLIMIT_DATA.
func vmData() (uint64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmData:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// memoryPeak is the most memory an ended process held, in bytes (Linux counts ru_maxrss in
// KiB), or 0 when unknown.
func memoryPeak(st *os.ProcessState) uint64 {
	if st == nil {
		return 0
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 0 {
		return uint64(ru.Maxrss) << 10
	}
	return 0
}
