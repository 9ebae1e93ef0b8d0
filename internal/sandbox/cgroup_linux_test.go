package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// newCgroups returns the sandbox cgroups this process holds that are not in before.
func newCgroups(before []string) []string {
	return slices.DeleteFunc(sandbox.CgroupDirs(), func(d string) bool { return slices.Contains(before, d) })
}

// A sandbox's program cannot leave its cgroups, raise their limits, or reach another
// sandbox's, while both run: no path of the host's cgroups exists for it (its own cgroup's
// files, its parent's, capgate's, the hierarchies' roots, the other sandbox's), the
// cgroup.procs files bound for the init are refused to it (Landlock), it cannot mount a
// cgroup file system, and both sandboxes' cgroups keep their processes and their limits.
func TestCgroupCannotBeLeft(t *testing.T) {
	s := sandboxtest.Open(t)
	if _, ok := sandbox.MemoryLimit(); !ok {
		t.Skip("no memory cgroup here")
	}
	limits := sandbox.Limits{MemoryBytes: 256 << 20, Processes: 64}
	before := sandbox.CgroupDirs()
	sp := self(t, "hold", "1")
	sp.Limits = limits
	_, _, firstOut := startProbe(t, s, sp)
	if line, _ := firstOut.ReadString('\n'); line != "held\n" {
		t.Fatalf("the first sandbox: %q", line)
	}
	first := newCgroups(before)
	sp = self(t, "writelines")
	sp.Limits = limits
	_, in, out := startProbe(t, s, sp)
	second := newCgroups(append(before, first...))
	if len(first) == 0 || len(second) == 0 {
		t.Fatalf("cgroups: first %v, second %v", first, second)
	}

	var targets []string
	for _, dir := range append(append([]string(nil), first...), second...) {
		for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.max", "memory.swap.max", "pids.max"} {
			targets = append(targets, filepath.Join(dir, f)+" 9223372036854771712")
		}
		targets = append(targets, filepath.Join(dir, "cgroup.procs")+" 0")
	}
	for _, base := range sandbox.CgroupBases() {
		targets = append(targets, filepath.Join(base, "cgroup.procs")+" 0", filepath.Join(filepath.Dir(base), "cgroup.procs")+" 0")
	}
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"} {
		targets = append(targets, root+"/cgroup.procs 0", root+"/memory.limit_in_bytes 9223372036854771712")
	}
	// The files bound for the init: joining them again is harmless, but the program may not
	// even open them (Landlock leaves /run/capgate out).
	bound := []string{sandbox.CgroupPath(0) + " 0", sandbox.CgroupPath(1) + " 0"}
	for _, target := range append(targets, bound...) {
		if _, err := in.Write([]byte(target + "\n")); err != nil {
			t.Fatal(err)
		}
		got, _ := out.ReadString('\n')
		got = strings.TrimSpace(got)
		switch {
		case got == "ok":
			t.Errorf("the program wrote %s", target)
		case slices.Contains(bound, target) && sandbox.LandlockABI() > 0 && got != "EACCES" && got != "ENOENT":
			t.Errorf("writing %s: %s, want EACCES (Landlock)", target, got)
		case !slices.Contains(bound, target) && got != "ENOENT":
			t.Errorf("writing %s: %s, want ENOENT (not in the sandbox)", target, got)
		}
	}
	// Both sandboxes are where they were put, under their limits.
	for _, dir := range append(append([]string(nil), first...), second...) {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || len(strings.Fields(string(b))) == 0 {
			t.Errorf("%s holds no process: %q %v", dir, b, err)
		}
		for f, want := range map[string]string{"memory.limit_in_bytes": strconv.Itoa(256 << 20), "memory.max": strconv.Itoa(256 << 20), "pids.max": "64"} {
			if v := cgroupValue(t, dir, f); v != "" && v != want {
				t.Errorf("%s/%s = %s, want %s", dir, f, v, want)
			}
		}
	}
}

// A program sees no cgroup of the host: no cgroup file system, a /proc/self/cgroup that names
// none of the host's cgroups above capgate's own (the sandbox has a cgroup namespace whose
// root is capgate's), and no mount of a cgroup hierarchy of its own.
func TestCgroupsInvisible(t *testing.T) {
	s := sandboxtest.Open(t)
	limits := sandbox.Limits{MemoryBytes: 256 << 20, Processes: 64}
	lines := func(args ...string) string {
		sp := self(t, args...)
		sp.Limits = limits
		return strings.TrimSpace(run(t, s, sp))
	}
	if got := lines("list", "/sys/fs/cgroup"); got != "ENOENT" {
		t.Errorf("/sys/fs/cgroup in the sandbox: %s", got)
	}
	for _, c := range []string{"memory", "pids", "v2"} {
		if got := lines("mountcgroup", c); got == "ok" {
			t.Errorf("the program mounted a cgroup hierarchy (%s)", c)
		}
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	inside := lines("read", "/proc/self/cgroup")
	t.Logf("/proc/self/cgroup in the sandbox: %s", inside)
	for line := range strings.SplitSeq(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] != "/" && strings.Contains(inside, parts[2]) {
			t.Errorf("the sandbox sees capgate's own cgroup %s", parts[2])
		}
	}
}
