package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits.Processes is held by a cgroup per sandbox, with the pids controller: RLIMIT_NPROC
// does not bind root (the kernel skips the check for the host's uid 0, which the sandbox's
// user still is when capgate runs as root), and it counts per user, not per sandbox. capgate
// makes, for each sandbox with a process limit, a cgroup <base>/<n> with pids.max set, binds
// its cgroup.procs file into the sandbox, and the init writes itself there before anything
// else runs; everything the program starts is counted in it, and it cannot leave (it sees no
// other cgroup, and has no capability). The base is capgate-<pid> in capgate's own cgroup of
// a hierarchy with the pids controller: cgroup v2 where capgate may enable pids below its own
// cgroup, else a cgroup v1 pids hierarchy. A reaper removes a sandbox's cgroup once the
// sandbox has ended; bases of capgate processes that are gone are removed at the next start.
//
// The pids controller counts tasks: threads as well as processes.

// cgroups is this process's manager of sandbox cgroups.
type cgroups struct {
	base    string // "" when none is usable
	version int
	why     string // when base is "": why not

	mu      sync.Mutex
	n       uint64
	live    map[string]*liveCgroup
	reaping bool
}

type liveCgroup struct {
	made time.Time
	seen bool
}

var sandboxCgroups = sync.OnceValue(findCgroups)

// findCgroups finds where this process may make cgroups with the pids controller, makes its
// base there, and sweeps the bases of capgate processes that are gone.
func findCgroups() *cgroups {
	g := &cgroups{live: map[string]*liveCgroup{}}
	own, err := ownCgroups()
	if err != nil {
		g.why = "cannot read /proc/self/cgroup: " + err.Error()
		return g
	}
	mounts, err := cgroupMounts()
	if err != nil {
		g.why = "cannot read /proc/self/mountinfo: " + err.Error()
		return g
	}
	var whys []string
	for _, m := range mounts {
		rel, ok := own[m.key]
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
		if m.key == "" {
			if err := enablePids(dir); err != nil {
				whys = append(whys, fmt.Sprintf("cgroup v2 at %s: %v", dir, err))
				continue
			}
		}
		sweep(dir)
		base := filepath.Join(dir, "capgate-"+strconv.Itoa(os.Getpid()))
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			whys = append(whys, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		if m.key == "" {
			if err := enablePids(base); err != nil {
				_ = os.Remove(base)
				whys = append(whys, fmt.Sprintf("cgroup v2 at %s: %v", base, err))
				continue
			}
			g.version = 2
		} else {
			g.version = 1
		}
		// Made to learn that it can be; newCgroup makes it again when needed.
		_ = os.Remove(base)
		g.base = base
		return g
	}
	if len(whys) == 0 {
		whys = append(whys, "no cgroup hierarchy with the pids controller is mounted")
	}
	g.why = strings.Join(whys, "; ")
	return g
}

// ownCgroups maps each hierarchy of /proc/self/cgroup to this process's cgroup in it: "" for
// cgroup v2, "pids" for a v1 hierarchy that has the pids controller.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			own[""] = parts[2]
		case hasWord(parts[1], ",", "pids"):
			own["pids"] = parts[2]
		}
	}
	return own, nil
}

type cgroupMount struct {
	key   string // as ownCgroups
	root  string // the cgroup at the mount's root
	point string
}

// cgroupMounts lists the cgroup v2 mounts and the v1 mounts of the pids controller, v2 first.
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var v2, v1 []cgroupMount
	sc := bufio.NewScanner(f)
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
		switch {
		case b[0] == "cgroup2":
			v2 = append(v2, m)
		case b[0] == "cgroup" && hasWord(b[2], ",", "pids"):
			m.key = "pids"
			v1 = append(v1, m)
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

// enablePids makes the pids controller available to dir's children (cgroup v2). The kernel
// refuses it for a cgroup other than the root that holds processes itself: a capgate run as a
// systemd service needs Delegate=yes and its own leaf, or gets no cgroup here.
func enablePids(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !hasWord(strings.TrimSpace(string(b)), " ", "pids") {
		return errors.New("the pids controller is not available there")
	}
	b, err = os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err == nil && hasWord(strings.TrimSpace(string(b)), " ", "pids") {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0)
}

// sweep removes the bases, and their empty cgroups, of capgate processes that are gone.
func sweep(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "capgate-")
		if !ok || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(pid); err != nil || n == os.Getpid() {
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

// newCgroup returns the cgroup.procs file of a new cgroup that holds at most max tasks.
func (g *cgroups) newCgroup(max int64) (string, error) {
	if g.base == "" {
		return "", errors.New(g.why)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// The reaper removes the base when no sandbox is left, so that a capgate that exits
	// leaves nothing behind; make it again.
	if err := os.Mkdir(g.base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if g.version == 2 {
		if err := enablePids(g.base); err != nil {
			return "", err
		}
	}
	g.n++
	dir := filepath.Join(g.base, strconv.FormatUint(g.n, 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(max, 10)), 0); err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	g.live[dir] = &liveCgroup{made: time.Now()}
	if !g.reaping {
		g.reaping = true
		go g.reap()
	}
	return filepath.Join(dir, "cgroup.procs"), nil
}

// reap removes the cgroups of sandboxes that ended, and of those never started within
// CgroupStartGrace, until none is left.
func (g *cgroups) reap() {
	t := time.NewTicker(CgroupReapInterval)
	defer t.Stop()
	for range t.C {
		g.mu.Lock()
		for dir, c := range g.live {
			if occupied(dir) {
				c.seen = true
				continue
			}
			if !c.seen && peak(dir) > 0 {
				c.seen = true
			}
			if c.seen || time.Since(c.made) > CgroupStartGrace {
				if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
					delete(g.live, dir)
				}
			}
		}
		if len(g.live) == 0 {
			_ = os.Remove(g.base)
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

// peak is the most tasks the cgroup held (pids.peak, Linux 6.1 and later), or 0.
func peak(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, "pids.peak"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// count is the number of cgroups this process holds now (for tests).
func (g *cgroups) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}

// processCgroup returns the cgroup.procs file of a new cgroup of at most max tasks.
func processCgroup(max int64) (string, error) { return sandboxCgroups().newCgroup(max) }

// cgroupReport says where sandboxes' cgroups are made, or why none can be.
func cgroupReport() (string, bool) {
	g := sandboxCgroups()
	if g.base == "" {
		return g.why, false
	}
	return fmt.Sprintf("cgroup v%d pids controller (%s)", g.version, g.base), true
}
