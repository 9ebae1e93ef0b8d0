package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The hierarchies of /proc/self/mountinfo: cgroup v2 first, v1 only with a controller the
// sandbox uses (co-mounted ones together), mount points unescaped.
func TestCgroupMounts(t *testing.T) {
	info := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids\040x rw,relatime - cgroup cgroup rw,pids,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	got, err := cgroupMounts(strings.NewReader(info))
	if err != nil {
		t.Fatal(err)
	}
	want := []cgroupMount{
		{version: 2, root: "/", point: "/sys/fs/cgroup/unified"},
		{version: 1, controllers: []string{"memory"}, root: "/docker/abc", point: "/sys/fs/cgroup/memory"},
		{version: 1, controllers: []string{"pids", "memory"}, root: "/", point: "/sys/fs/cgroup/pids x"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cgroupMounts:\n got %+v\nwant %+v", got, want)
	}
	own := ownCgroups("9:name=systemd:/\n8:pids:/\n4:memory:/docker/abc/sub\n1:cpu,cpuacct:/x\n0::/\n")
	if want := map[string]string{"": "/", "pids": "/", "memory": "/docker/abc/sub"}; !reflect.DeepEqual(own, want) {
		t.Errorf("ownCgroups = %v, want %v", own, want)
	}
}

// fakeTree makes dir as a cgroup folder with the given files.
func fakeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readCgroupFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Where each controller is held, in folders laid out as the kernel's (the kernel's own
// behaviour, on this machine's hierarchies, is what the sandbox tests check): v1 hierarchies
// each hold their own, with the memory base in capgate's cgroup below the mount's root; one
// cgroup v2 tree holds both in one cgroup; a controller v2 does not offer is taken from v1, or
// is said to be missing. Bases of capgate processes that are gone are swept.
func TestFindCgroups(t *testing.T) {
	const pid = 4242
	base := "capgate-4242"
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		fakeTree(t, filepath.Join(root, "unified"), map[string]string{"cgroup.controllers": "hugetlb"})
		fakeTree(t, filepath.Join(root, "pids", "capgate-999999999", "3"), nil)
		fakeTree(t, filepath.Join(root, "memory", "sub"), nil)
		mounts := []cgroupMount{
			{version: 2, root: "/", point: filepath.Join(root, "unified")},
			{version: 1, controllers: []string{"memory"}, root: "/docker/abc", point: filepath.Join(root, "memory")},
			{version: 1, controllers: []string{"pids"}, root: "/", point: filepath.Join(root, "pids")},
		}
		own := map[string]string{"": "/", "pids": "/", "memory": "/docker/abc/sub"}
		g := findCgroupsIn(own, mounts, pid)
		if tr := g.tree(pidsController); tr == nil || tr.version != 1 || tr.base != filepath.Join(root, "pids", base) {
			t.Errorf("pids: %+v (%s)", tr, g.why[pidsController])
		}
		if tr := g.tree(memoryController); tr == nil || tr.version != 1 || tr.base != filepath.Join(root, "memory", "sub", base) {
			t.Errorf("memory: %+v (%s)", tr, g.why[memoryController])
		}
		if _, err := os.Stat(filepath.Join(root, "pids", "capgate-999999999")); !os.IsNotExist(err) {
			t.Errorf("the base of a capgate that is gone is left: %v", err)
		}
		procs, err := g.newCgroup(Limits{Processes: 10, MemoryBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{filepath.Join(root, "memory", "sub", base, "1", "cgroup.procs"), filepath.Join(root, "pids", base, "1", "cgroup.procs")}
		if len(procs) != 2 || !(procs[0] == want[0] && procs[1] == want[1] || procs[0] == want[1] && procs[1] == want[0]) {
			t.Fatalf("procs = %v, want %v", procs, want)
		}
		if v := readCgroupFile(t, filepath.Join(root, "pids", base, "1", "pids.max")); v != "10" {
			t.Errorf("pids.max = %s", v)
		}
		if v := readCgroupFile(t, filepath.Join(root, "memory", "sub", base, "1", "memory.limit_in_bytes")); v != "1048576" {
			t.Errorf("memory.limit_in_bytes = %s", v)
		}
		// A budget of one kind only: a cgroup in its hierarchy only.
		if procs, err := g.newCgroup(Limits{MemoryBytes: 1 << 20}); err != nil || len(procs) != 1 || !strings.Contains(procs[0], "memory") {
			t.Errorf("a memory budget alone: %v %v", procs, err)
		}
		if procs, err := g.newCgroup(Limits{OpenFiles: 10}); err != nil || len(procs) != 0 {
			t.Errorf("no budget a cgroup holds: %v %v", procs, err)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		own := filepath.Join(root, "system.slice", "capgate.service")
		fakeTree(t, own, map[string]string{"cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": ""})
		// The kernel gives each new cgroup its files; here the base is made with them.
		fakeTree(t, filepath.Join(own, base), map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": ""})
		g := findCgroupsIn(map[string]string{"": "/system.slice/capgate.service"}, []cgroupMount{{version: 2, root: "/", point: root}}, pid)
		if len(g.trees) != 1 || g.trees[0].version != 2 || !reflect.DeepEqual(g.trees[0].holds, []string{"pids", "memory"}) {
			t.Fatalf("trees %+v, why %v", g.trees, g.why)
		}
		procs, err := g.newCgroup(Limits{Processes: 10, MemoryBytes: 1 << 20})
		if err != nil || len(procs) != 1 {
			t.Fatalf("procs = %v, %v", procs, err)
		}
		dir := filepath.Dir(procs[0])
		if v := readCgroupFile(t, filepath.Join(dir, "memory.max")); v != "1048576" {
			t.Errorf("memory.max = %s", v)
		}
		if v := readCgroupFile(t, filepath.Join(dir, "pids.max")); v != "10" {
			t.Errorf("pids.max = %s", v)
		}
	})
	t.Run("v2 without memory", func(t *testing.T) {
		root := t.TempDir()
		fakeTree(t, root, map[string]string{"cgroup.controllers": "cpu pids", "cgroup.subtree_control": "pids"})
		fakeTree(t, filepath.Join(root, base), map[string]string{"cgroup.controllers": "pids", "cgroup.subtree_control": "pids"})
		g := findCgroupsIn(map[string]string{"": "/"}, []cgroupMount{{version: 2, root: "/", point: root}}, pid)
		if g.tree(pidsController) == nil || g.tree(memoryController) != nil {
			t.Fatalf("trees %+v", g.trees)
		}
		if why := g.why[memoryController]; !strings.Contains(why, "the memory controller is not available") {
			t.Errorf("why no memory cgroup: %s", why)
		}
		// Without it the memory budget is left to the per-process limits: no cgroup for it.
		if procs, err := g.newCgroup(Limits{MemoryBytes: 1 << 20}); err != nil || len(procs) != 0 {
			t.Errorf("a memory budget without a memory controller: %v %v", procs, err)
		}
	})
	t.Run("none", func(t *testing.T) {
		g := findCgroupsIn(map[string]string{}, nil, pid)
		for _, c := range controllers {
			if g.tree(c) != nil || !strings.Contains(g.why[c], "no cgroup hierarchy with the "+c+" controller") {
				t.Errorf("%s: %+v, %s", c, g.tree(c), g.why[c])
			}
		}
	})
}
