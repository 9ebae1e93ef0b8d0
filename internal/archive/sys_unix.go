//go:build unix

package archive

import (
	"io/fs"
	"syscall"
)

// openFlags: O_NONBLOCK so that a file swapped for a FIFO after Lstat cannot block the open;
// the Stat of the opened handle then refuses it. It changes nothing for a regular file.
const openFlags = syscall.O_NONBLOCK

// linkCount returns the number of hard links to the file fi describes.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
