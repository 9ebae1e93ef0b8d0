package sandbox

// CgroupsLive is how many sandbox cgroups this process holds now.
func CgroupsLive() int { return sandboxCgroups().count() }

// CgroupBase is the folder this process's sandbox cgroups are made in, or "".
func CgroupBase() string { return sandboxCgroups().base }

// InitPath is where the sandbox shows the init.
const InitPath = initPath
