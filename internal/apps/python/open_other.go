//go:build !unix

package python

import "os"

// openFlags open a script for reading.
const openFlags = os.O_RDONLY
