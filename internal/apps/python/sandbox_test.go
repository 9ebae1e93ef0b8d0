package python_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/python"
)

// A script's process runs in a sandbox of its own: other user, pid, network and mount
// namespaces than capgate's, with none of the host's folders in its view.
func TestScriptProcessIsSandboxed(t *testing.T) {
	dir := t.TempDir()
	app := newApp(t, dir)
	done := make(chan error, 1)
	go func() {
		_, err := call(t, app, python.ExecuteScriptID, map[string]any{"code": "x = 0\nfor i in range(100000000):\n    x += i\n", "timeout": 20000})
		done <- err
	}()
	pid := 0
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pid = childPid()
	}
	if pid == 0 {
		t.Fatal("no script process seen")
	}
	for _, ns := range []string{"user", "pid", "net", "mnt", "ipc"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err != nil {
			continue // it ended: the loop below cannot tell, the check above did for the others
		}
		if mine == theirs {
			t.Errorf("the script's process shares capgate's %s namespace", ns)
		}
	}
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	if _, err := os.Stat(filepath.Join(root, dir)); err == nil {
		t.Error("the script's process sees the scripts folder")
	}
	if _, err := os.Stat(filepath.Join(root, "etc/shadow")); err == nil {
		t.Error("the script's process sees /etc/shadow")
	}
	<-done
}

// childPid finds a script process of this test binary on the host.
func childPid() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasPrefix(string(b), "/run/capgate/python\x00__capgate_python_sandbox") {
			if ppid := parent(pid); ppid != os.Getpid() { // bwrap's own process is the test's child
				return pid
			}
		}
	}
	return 0
}

func parent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, _ := strconv.Atoi(f[1])
	return n
}
