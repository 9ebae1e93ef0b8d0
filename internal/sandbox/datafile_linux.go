package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dataFile returns a sealed-for-reading memory file holding b, at its start, for bwrap's
// --ro-bind-data, which copies it into the sandbox.
func dataFile(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %s: %w", name, err)
	}
	return f, nil
}
