package terminal

import (
	"errors"
	"io"
	"os"
	"sync"
)

// capture keeps the first limit bytes written to it and counts the rest as truncated. It is
// safe for concurrent use: a background command's output is read while it is written.
type capture struct {
	mu        sync.Mutex
	buf       []byte
	limit     int
	truncated bool
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

// Write keeps what fits and reports everything written, so the reader never stops early.
func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - len(c.buf)
	if len(p) > room {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf = append(c.buf, p...)
	return n, nil
}

// snapshot returns the kept output, made valid UTF-8, and whether any was discarded.
func (c *capture) snapshot() (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return validText(c.buf), c.truncated
}

// size is how many bytes are kept.
func (c *capture) size() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// drain reads r until it ends or is closed, into c. It reads on past the limit so that the
// writer is never blocked on a full pipe.
func drain(r *os.File, c *capture) {
	buf := make([]byte, readBufferBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.Write(buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				// The stream broke off, or was closed because a process that left the
				// command's group held it open: say that something may be missing.
				c.mu.Lock()
				c.truncated = true
				c.mu.Unlock()
			}
			return
		}
	}
}
