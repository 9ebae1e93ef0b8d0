package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits.Processes and Limits.MemoryBytes are held by a cgroup per sandbox, with the pids and
// memory controllers. RLIMIT_NPROC does not bind root (the kernel skips the check for the
// host's uid 0, which the sandbox's user still is when capgate runs as root), and it counts per
// user, not per sandbox; RLIMIT_DATA counts per process, so a sandbox of N processes could use
// N times its memory budget. capgate makes, for each sandbox with either limit, a cgroup
// <base>/<n> in each hierarchy that holds one of them, sets pids.max there, or the memory
// limit (cgroup v1: memory.limit_in_bytes, and memory.memsw.limit_in_bytes to the same so that
// swap does not escape it; cgroup v2: memory.max, and memory.swap.max 0), binds each
// cgroup.procs file into the sandbox, and the init writes itself into each before anything
// else runs; everything the program starts is counted there, and it cannot leave (it sees no
// other cgroup, and has no capability). A process past the memory limit is killed by the
// kernel's OOM killer within the sandbox's cgroup, never outside it; the per-process rlimits
// stay, the first limit a program meets (an allocation that fails, rather than a kill).
//
// The base is capgate-<pid> in capgate's own cgroup of a hierarchy with the controller:
// cgroup v2 where capgate may enable it below its own cgroup, else a cgroup v1 hierarchy of
// it. On cgroup v2 one cgroup holds both; on v1 they are separate hierarchies, and a sandbox
// has a cgroup in each. A reaper removes a sandbox's cgroups once the sandbox has ended; bases
// of capgate processes that are gone are removed at the next start.
//
// The pids controller counts tasks: threads as well as processes. The memory controller
// counts what the sandbox's processes touch: their memory, the files they write in the
// in-memory /tmp, the page cache they fill and the kernel's memory for them.

// The controllers a sandbox's cgroup is limited with.
const (
	pidsController   = "pids"
	memoryController = "memory"
)

var controllers = []string{pidsController, memoryController}

// cgroups is this process's manager of sandbox cgroups.
type cgroups struct {
	trees []*cgroupTree     // at most one holds each controller
	why   map[string]string // for a controller no tree holds: why not

	mu      sync.Mutex
	n       uint64
	live    map[uint64]*liveCgroup
	reaping bool
}

// cgroupTree is a hierarchy where sandbox cgroups are made.
type cgroupTree struct {
	version int
	base    string
	holds   []string // the controllers it holds, of controllers
	swap    bool     // cgroup v1 memory: memory.memsw files exist (swap is counted)
}

// liveCgroup is one sandbox's cgroups, one in each tree it needed.
type liveCgroup struct {
	dirs []string
	made time.Time
	seen bool
}

var sandboxCgroups = sync.OnceValue(findCgroups)

// findCgroups finds, for each controller, where this process may make cgroups with it, makes
// its base there, and sweeps the bases of capgate processes that are gone.
func findCgroups() *cgroups {
	fail := func(why string) *cgroups {
		g := &cgroups{live: map[uint64]*liveCgroup{}, why: map[string]string{}}
		for _, c := range controllers {
			g.why[c] = why
		}
		return g
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fail("cannot read /proc/self/cgroup: " + err.Error())
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fail("cannot read /proc/self/mountinfo: " + err.Error())
	}
	defer f.Close()
	mounts, err := cgroupMounts(f)
	if err != nil {
		return fail("cannot read /proc/self/mountinfo: " + err.Error())
	}
	return findCgroupsIn(ownCgroups(string(own)), mounts, os.Getpid())
}

// findCgroupsIn is findCgroups on the hierarchies mounts, where this process, pid, is in own
// (as ownCgroups).
func findCgroupsIn(own map[string]string, mounts []cgroupMount, pid int) *cgroups {
	g := &cgroups{live: map[uint64]*liveCgroup{}, why: map[string]string{}}
	whys := map[string][]string{}
	for _, m := range mounts {
		var want []string
		for _, c := range controllers {
			if g.tree(c) == nil && (m.version == 2 || slices.Contains(m.controllers, c)) {
				want = append(want, c)
			}
		}
		if len(want) == 0 {
			continue
		}
		key := ""
		if m.version == 1 {
			key = want[0]
		}
		rel, ok := own[key]
		if !ok {
			continue
		}
		if m.root != "/" {
			if rel != m.root && !strings.HasPrefix(rel, m.root+"/") {
				continue
			}
			rel = strings.TrimPrefix(rel, m.root)
		}
		dir := filepath.Join(m.point, rel)
		t := &cgroupTree{version: m.version, base: filepath.Join(dir, "capgate-"+strconv.Itoa(pid))}
		if m.version == 2 {
			var problems map[string]error
			want, problems = enable(dir, want)
			for c, err := range problems {
				whys[c] = append(whys[c], fmt.Sprintf("cgroup v2 at %s: %v", dir, err))
			}
			if len(want) == 0 {
				continue
			}
		}
		sweep(dir, pid)
		if err := os.Mkdir(t.base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			for _, c := range want {
				whys[c] = append(whys[c], fmt.Sprintf("%s: %v", dir, err))
			}
			continue
		}
		if m.version == 2 {
			var problems map[string]error
			want, problems = enable(t.base, want)
			for c, err := range problems {
				whys[c] = append(whys[c], fmt.Sprintf("cgroup v2 at %s: %v", t.base, err))
			}
		}
		if slices.Contains(want, memoryController) && m.version == 1 {
			_, err := os.Stat(filepath.Join(t.base, "memory.memsw.limit_in_bytes"))
			t.swap = err == nil
		}
		// Made to learn that it can be; newCgroup makes it again when needed.
		_ = os.Remove(t.base)
		if len(want) > 0 {
			t.holds = want
			g.trees = append(g.trees, t)
		}
	}
	for _, c := range controllers {
		if g.tree(c) != nil {
			continue
		}
		if len(whys[c]) == 0 {
			whys[c] = append(whys[c], "no cgroup hierarchy with the "+c+" controller is mounted")
		}
		g.why[c] = strings.Join(whys[c], "; ")
	}
	return g
}

// tree is the tree that holds controller c, or nil.
func (g *cgroups) tree(c string) *cgroupTree {
	for _, t := range g.trees {
		if slices.Contains(t.holds, c) {
			return t
		}
	}
	return nil
}

// ownCgroups maps each hierarchy of /proc/self/cgroup (its text) to this process's cgroup in
// it: "" for cgroup v2, the controller's name for a v1 hierarchy that has one of controllers.
func ownCgroups(text string) map[string]string {
	own := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range controllers {
			if hasWord(parts[1], ",", c) {
				own[c] = parts[2]
			}
		}
	}
	return own
}

type cgroupMount struct {
	version     int
	controllers []string // cgroup v1: those of controllers it has
	root        string   // the cgroup at the mount's root
	point       string
}

// cgroupMounts lists the cgroup v2 mounts and the v1 mounts of controllers in mountinfo (as
// /proc/self/mountinfo), v2 first.
func cgroupMounts(mountinfo io.Reader) ([]cgroupMount, error) {
	var v2, v1 []cgroupMount
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(a[3]), point: unescapeMount(a[4])}
		switch b[0] {
		case "cgroup2":
			m.version = 2
			v2 = append(v2, m)
		case "cgroup":
			m.version = 1
			for _, c := range controllers {
				if hasWord(b[2], ",", c) {
					m.controllers = append(m.controllers, c)
				}
			}
			if len(m.controllers) > 0 {
				v1 = append(v1, m)
			}
		}
	}
	return append(v2, v1...), sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasWord(list, sep, w string) bool {
	for x := range strings.SplitSeq(list, sep) {
		if x == w {
			return true
		}
	}
	return false
}

// enable makes the controllers of want available to dir's children (cgroup v2), and returns
// those it could, and why not for each other. The kernel refuses it for a cgroup other than
// the root that holds processes itself: a capgate run as a systemd service needs Delegate=yes
// and its own leaf, or gets no cgroup here.
func enable(dir string, want []string) ([]string, map[string]error) {
	problems := map[string]error{}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		for _, c := range want {
			problems[c] = err
		}
		return nil, problems
	}
	available := strings.TrimSpace(string(b))
	b, _ = os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	enabled := strings.TrimSpace(string(b))
	var held []string
	for _, c := range want {
		switch {
		case !hasWord(available, " ", c):
			problems[c] = fmt.Errorf("the %s controller is not available there", c)
		case hasWord(enabled, " ", c):
			held = append(held, c)
		default:
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				problems[c] = err
				continue
			}
			held = append(held, c)
		}
	}
	return held, problems
}

// sweep removes the bases, and their empty cgroups, of capgate processes that are gone (not
// self, this process).
func sweep(dir string, self int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "capgate-")
		if !ok || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(pid); err != nil || n == self {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue
		}
		base := filepath.Join(dir, e.Name())
		subs, _ := os.ReadDir(base)
		for _, s := range subs {
			if s.IsDir() {
				_ = os.Remove(filepath.Join(base, s.Name()))
			}
		}
		_ = os.Remove(base)
	}
}

// newCgroup makes the cgroups that hold l's Processes and MemoryBytes where a tree holds
// their controllers, and returns the cgroup.procs file of each (none when no limit of l is
// held here). A limit no tree holds is left out: the caller asks held which are.
func (g *cgroups) newCgroup(l Limits) ([]string, error) {
	limits := map[string]func(dir string, v int) error{}
	if l.Processes > 0 && g.tree(pidsController) != nil {
		limits[pidsController] = func(dir string, _ int) error {
			return writeCgroup(dir, "pids.max", strconv.FormatInt(l.Processes, 10))
		}
	}
	if l.MemoryBytes > 0 && g.tree(memoryController) != nil {
		limits[memoryController] = func(dir string, version int) error {
			n := strconv.FormatInt(l.MemoryBytes, 10)
			if version == 2 {
				if err := writeCgroup(dir, "memory.max", n); err != nil {
					return err
				}
				return writeOptional(dir, "memory.swap.max", "0")
			}
			// The memory limit first: the kernel refuses memory+swap below it. A new cgroup
			// inherits its parent's oom_kill_disable, under which the sandbox's processes
			// would wait at the limit for ever rather than one be killed.
			if err := writeCgroup(dir, "memory.limit_in_bytes", n); err != nil {
				return err
			}
			if err := writeOptional(dir, "memory.memsw.limit_in_bytes", n); err != nil {
				return err
			}
			return writeOptional(dir, "memory.oom_control", "0")
		}
	}
	if len(limits) == 0 {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	c := &liveCgroup{made: time.Now()}
	var procs []string
	for _, t := range g.trees {
		var set []func(string, int) error
		for _, name := range t.holds {
			if f := limits[name]; f != nil {
				set = append(set, f)
			}
		}
		if len(set) == 0 {
			continue
		}
		dir, err := t.newCgroup(g.n)
		if err == nil {
			c.dirs = append(c.dirs, dir)
			for _, f := range set {
				if err = f(dir, t.version); err != nil {
					break
				}
			}
		}
		if err != nil {
			for _, d := range c.dirs {
				_ = os.Remove(d)
			}
			return nil, err
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	g.live[g.n] = c
	if !g.reaping {
		g.reaping = true
		go g.reap()
	}
	return procs, nil
}

// newCgroup makes the cgroup numbered n in t. The reaper removes the base when no sandbox is
// left, so that a capgate that exits leaves nothing behind; it is made again here.
func (t *cgroupTree) newCgroup(n uint64) (string, error) {
	if err := os.Mkdir(t.base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if t.version == 2 {
		if _, problems := enable(t.base, t.holds); len(problems) > 0 {
			return "", errors.Join(slices.Collect(maps.Values(problems))...)
		}
	}
	dir := filepath.Join(t.base, strconv.FormatUint(n, 10))
	return dir, os.Mkdir(dir, 0o755)
}

// writeCgroup writes v to dir's file name.
func writeCgroup(dir, name, v string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(v), 0)
}

// writeOptional writes v to dir's file name when the kernel has it (swap accounting may be
// compiled out or turned off, and then swap is not counted at all).
func writeOptional(dir, name, v string) error {
	if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return writeCgroup(dir, name, v)
}

// reap removes the cgroups of sandboxes that ended, and of those never started within
// CgroupStartGrace, until none is left.
func (g *cgroups) reap() {
	t := time.NewTicker(CgroupReapInterval)
	defer t.Stop()
	for range t.C {
		g.mu.Lock()
		for n, c := range g.live {
			// The init joins one cgroup after the other: a sandbox is over once it is in none.
			if slices.ContainsFunc(c.dirs, occupied) {
				c.seen = true
				continue
			}
			if !c.seen && slices.ContainsFunc(c.dirs, used) {
				c.seen = true
			}
			if c.seen || time.Since(c.made) > CgroupStartGrace {
				c.dirs = slices.DeleteFunc(c.dirs, func(dir string) bool {
					err := os.Remove(dir)
					return err == nil || errors.Is(err, os.ErrNotExist)
				})
				if len(c.dirs) == 0 {
					delete(g.live, n)
				}
			}
		}
		if len(g.live) == 0 {
			for _, t := range g.trees {
				_ = os.Remove(t.base)
			}
			g.reaping = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// occupied reports whether a process is in the cgroup at dir.
func occupied(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// used reports whether the cgroup at dir ever held a task: the most tasks it held (pids.peak,
// Linux 6.1 and later) or the most memory (memory.peak, Linux 5.19 and later;
// memory.max_usage_in_bytes on cgroup v1) is not 0.
func used(dir string) bool {
	for _, name := range []string{"pids.peak", "memory.peak", "memory.max_usage_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); n > 0 {
			return true
		}
	}
	return false
}

// count is the number of sandboxes whose cgroups this process holds now (for tests).
func (g *cgroups) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}

// sandboxCgroup returns the cgroup.procs files of new cgroups that hold l's Processes and
// MemoryBytes, those of them that can be held here (cgroupHeld says which).
func sandboxCgroup(l Limits) ([]string, error) { return sandboxCgroups().newCgroup(l) }

// cgroupHeld says whether controller c ("pids", "memory") holds sandboxes here, and where, or
// why not.
func cgroupHeld(c string) (string, bool) {
	g := sandboxCgroups()
	t := g.tree(c)
	if t == nil {
		return g.why[c], false
	}
	how := fmt.Sprintf("cgroup v%d %s controller (%s)", t.version, c, t.base)
	if c == memoryController && t.version == 1 && !t.swap {
		how += ", swap not counted (no memory.memsw files: swap accounting is off)"
	}
	return how, true
}
