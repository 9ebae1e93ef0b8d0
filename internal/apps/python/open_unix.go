//go:build unix

package python

import (
	"os"
	"syscall"
)

// openFlags open a script without blocking: opening a named pipe for reading would wait for
// a writer. A pipe is then refused as not a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
