package audit

import (
	"os"
	"syscall"
)

// datasync makes f's data durable without its times: a head file overwritten in place keeps
// its size, so fdatasync needs no journal commit, and does not flush along with it the data
// other files (the mirror) have waiting, which fsync's commit would (ext4, data=ordered).
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
