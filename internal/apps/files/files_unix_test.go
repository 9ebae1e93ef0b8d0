//go:build unix

package files_test

import (
	"syscall"
	"testing"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/sdk"
)

// TestSpecialFiles: a FIFO is refused at once (never blocks the call), and is neither
// deleted nor overwritten.
func TestSpecialFiles(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(e.path("fifo"), 0o644); err != nil {
		t.Skip("no FIFOs here")
	}
	e.fails(files.ReadFileID, `{"path":"fifo"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":"fifo","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":"fifo","content":"x","mode":"append"}`, sdk.CodeExecutionFailed)
	e.fails(files.DeleteFileID, `{"path":"fifo"}`, sdk.CodeExecutionFailed)
	e.fails(files.ListDirectoryID, `{"path":"fifo"}`, sdk.CodeExecutionFailed)
	m, _ := e.ok(files.ListDirectoryID, `{"path":"."}`)
	if m["entries"].([]any)[0].(map[string]any)["type"] != "other" {
		t.Errorf("a FIFO is listed as %v", m["entries"])
	}
}
