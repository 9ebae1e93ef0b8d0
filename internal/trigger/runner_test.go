package trigger

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// An engine's name says its host, process and start; a runner whose process stopped is gone
// at once on the same host, one still running is not, and one of another host or without
// those parts is left to its lease.
func TestRunnerGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process check reads /proc, which only Linux has here")
	}
	me := newInstance()
	parts := strings.Split(me, "/")
	if len(parts) != 4 || parts[2] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("this engine's name %q says no host, pid and start", me)
	}
	if gone(me) {
		t.Fatal("a running process is gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strings.Join([]string{parts[0], parts[1], strconv.Itoa(cmd.Process.Pid), parts[3]}, "/")
	if !gone(dead) {
		t.Errorf("a process that exited is not gone: %s", dead)
	}
	reused := strings.Join([]string{parts[0], parts[1], parts[2], parts[3] + "0"}, "/")
	if !gone(reused) {
		t.Error("a pid another process holds since is not gone")
	}
	for _, r := range []string{"eng_dead", strings.Join([]string{parts[0], "another-host", "1", "1"}, "/"), "a/b/c", "eng/" + parts[1] + "/x/1"} {
		if gone(r) {
			t.Errorf("%q is gone, want left to its lease", r)
		}
	}
}
