package gateway

import (
	"io/fs"
	"syscall"
)

// inode is the file's inode number, 0 where the system does not say.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
