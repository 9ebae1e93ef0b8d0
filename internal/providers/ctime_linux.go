package providers

import (
	"io/fs"
	"syscall"
)

// changeTime is the file's status change time in ns (a rename or a removal inside a folder
// changes the folder's), 0 where the system does not say.
func changeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return 0
}
