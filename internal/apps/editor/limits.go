package editor

import "time"

// Limits of the editor, each with its reason.
const (
	// MaxFileBytes bounds a file open_file loads and the content set_buffer takes: a text
	// buffer an agent reads and writes whole, in one call, has no use for more, and it bounds
	// the memory a call and its undo record can pin.
	MaxFileBytes = 1 << 20

	// MaxPathBytes bounds a path param: PATH_MAX on Linux.
	MaxPathBytes = 4096

	// MaxLines bounds the cursor's line: a buffer of MaxFileBytes has at most one more line
	// than it has bytes.
	MaxLines = MaxFileBytes + 1

	// UndoWindow is how long a change can be undone, the manifest's undo_window_ms. Records
	// are kept a little longer (undoGrace) so that an undo the gateway accepts at the end of
	// the window still finds its record.
	UndoWindow = 60 * time.Second
	undoGrace  = 5 * time.Second

	// MaxUndoRecords and MaxUndoBytes bound the undo records kept in memory: each may hold a
	// whole buffer or a whole file's previous bytes. The oldest go first; their undo then
	// fails, which is the safe direction.
	MaxUndoRecords = 64
	MaxUndoBytes   = 32 << 20

	// DefaultFileMode is the mode of a file save_file creates (an existing file keeps its own).
	DefaultFileMode = 0o644
)
