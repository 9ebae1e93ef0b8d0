package apps_test

import (
	"testing"

	"github.com/capgate/capgate/internal/apps/calc"
	"github.com/capgate/capgate/internal/apps/editor"
	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/apps/python"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/apps/solitaire"
	"github.com/capgate/capgate/internal/apps/syslog"
	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/manifest"
)

// Every param of every built-in capability is classified (a path, a cwd, a command, command
// input or text), so that a token with path or command constraints checks all of them and
// none of the built-in apps becomes unusable under such a token; and each manifest stays
// valid.
func TestBuiltinParamsClassified(t *testing.T) {
	for name, m := range map[string]string{
		"calc": calc.Manifest, "editor": editor.Manifest, "files": files.Manifest, "python": python.Manifest,
		"settings": settings.Manifest, "solitaire": solitaire.Manifest, "syslog": syslog.Manifest, "terminal": terminal.Manifest,
	} {
		doc, err := manifest.Load([]byte(m))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ps := doc.Validate(); len(ps) > 0 {
			t.Fatalf("%s: %v", name, ps)
		}
		for _, c := range doc.Manifest().Capabilities {
			if cl := doc.ParametersSchema(c.ID).Classes(); !cl.Complete() {
				t.Errorf("%s: params not all classified at %v", c.ID, cl.Unclassified())
			}
		}
	}
}

// The terminal's classes say what the constraints must see: the command and the cwd it runs
// in, and write_input's input as input to a running program.
func TestTerminalClasses(t *testing.T) {
	doc, err := manifest.Load([]byte(terminal.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	f := doc.ParametersSchema(terminal.ExecuteID).Classes().Find(map[string]any{"command": "ls", "cwd": "sub", "stdin": "rm -rf /", "timeout": 5.0})
	if len(f.Commands) != 1 || f.Commands[0].Cwd == nil || f.Commands[0].Cwd.Text != "sub" || len(f.Paths) != 1 || len(f.Inputs) != 0 {
		t.Errorf("execute_command: %+v", f)
	}
	f = doc.ParametersSchema(terminal.WriteInputID).Classes().Find(map[string]any{"id": 1.0, "input": "rm -rf /\n"})
	if len(f.Inputs) != 1 {
		t.Errorf("write_input: %+v", f)
	}
}
