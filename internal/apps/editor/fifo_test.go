//go:build unix

package editor_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capgate/capgate/internal/apps/editor"
	"github.com/capgate/capgate/sdk"
)

// A pipe in a file's place is refused at once, not waited on.
func TestOpenRefusesPipe(t *testing.T) {
	app, root, _ := setup(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skip("no pipes here:", err)
	}
	_, err := call(t, app, editor.OpenID, map[string]any{"path": "pipe"})
	wantErr(t, err, sdk.CodeInvalidParams, "path")
	_, err = call(t, app, editor.SaveID, map[string]any{"path": "pipe"})
	wantErr(t, err, sdk.CodeInvalidParams, "path")
}
