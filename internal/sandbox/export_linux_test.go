package sandbox

// CgroupsLive is how many sandboxes' cgroups this process holds now.
func CgroupsLive() int { return sandboxCgroups().count() }

// CgroupBases are the folders this process's sandbox cgroups are made in, one per hierarchy.
func CgroupBases() []string {
	var bases []string
	for _, t := range sandboxCgroups().trees {
		bases = append(bases, t.base)
	}
	return bases
}

// CgroupDirs are the cgroups of the sandboxes this process holds now.
func CgroupDirs() []string {
	g := sandboxCgroups()
	g.mu.Lock()
	defer g.mu.Unlock()
	var dirs []string
	for _, c := range g.live {
		dirs = append(dirs, c.dirs...)
	}
	return dirs
}

// InitPath is where the sandbox shows the init.
const InitPath = initPath

// CgroupPath is where the sandbox shows the cgroup.procs file of its i-th cgroup.
func CgroupPath(i int) string { return cgroupPath(i) }
