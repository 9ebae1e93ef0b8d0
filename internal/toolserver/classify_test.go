package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/manifest"
)

// moveFile is the published filesystem MCP server's move_file as it lists itself.
var moveFile = &mcpsdk.Tool{Name: "move_file", Description: "Move or rename files and directories.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},
	  "required":["source","destination"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`)}

// deriveOne derives the manifest of one tool with the overlay, and returns the classes of its
// capability's params, or the problem that left it out.
func deriveOne(t *testing.T, tool *mcpsdk.Tool, o Overlay) (*manifest.Classes, string) {
	t.Helper()
	doc, left, err := Derive("fs", []Pin{pinOf(t, tool, "act")}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		return nil, left[0].Rule
	}
	d, err := manifest.Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	return d.ParametersSchema("tool.mcp.fs.act").Classes(), ""
}

// A tool's params are unclassified until the operator's overlay classifies them: the
// server's own formats are dropped, and the overlay's pointers reach every shape of schema.
func TestOverlayParams(t *testing.T) {
	cl, _ := deriveOne(t, moveFile, nil)
	if cl.Complete() {
		t.Fatal("move_file without an overlay is classified")
	}
	cl, _ = deriveOne(t, moveFile, Overlay{"move_file": {SideEffects: manifest.SideEffectWrite,
		Params: map[string]string{"/source": "path", "/destination": "path"}}})
	if !cl.Complete() {
		t.Fatalf("move_file with its overlay: unclassified %v", cl.Unclassified())
	}
	f := cl.Find(map[string]any{"source": "/etc/passwd", "destination": "x"})
	if !reflect.DeepEqual(f.Paths, []manifest.Value{{Pointer: "/destination", Text: "x"}, {Pointer: "/source", Text: "/etc/passwd"}}) {
		t.Errorf("paths %v", f.Paths)
	}

	// A server that calls its paths text is not believed.
	liar := &mcpsdk.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
	  "properties":{"file":{"type":"string","format":"text"},"opts":{"type":"object","format":"text"}},
	  "$defs":{"x":{"format":"command"}}}`)}
	if cl, _ := deriveOne(t, liar, nil); cl.Complete() {
		t.Error("the server's own format text was taken")
	}

	shapes := &mcpsdk.Tool{Name: "shapes", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{
	  "opts":{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string"},"n":{"type":"integer"}}},
	  "paths":{"type":"array","items":{"type":"string"}},
	  "target":{"$ref":"#/$defs/p"},
	  "either":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
	  "run":{"type":"object","additionalProperties":false,"properties":{"command":{"type":"string"},"cwd":{"type":"string"}}},
	  "env":{"type":"object"},
	  "a/b":{"type":"string"}},
	  "$defs":{"p":{"type":"string"}}}`)}
	params := map[string]string{"/opts/path": "path", "/paths/*": "path", "/target": "path", "/either": "path",
		"/either/*": "path", "/run/command": "command", "/run/cwd": "cwd", "/env/*": "text", "/a~1b": "text"}
	cl, rule := deriveOne(t, shapes, Overlay{"shapes": {SideEffects: manifest.SideEffectRead, Params: params}})
	if rule != "" || !cl.Complete() {
		t.Fatalf("shapes: %q %v", rule, cl.Unclassified())
	}
	f = cl.Find(map[string]any{"opts": map[string]any{"path": "/o", "n": 1.0}, "paths": []any{"/p0", "/p1"}, "target": "/t",
		"either": []any{"/e"}, "run": map[string]any{"command": "ls", "cwd": "/c"}, "env": map[string]any{"X": "1", "Y": map[string]any{"z": "/deep"}}, "a/b": "x"})
	wantPaths := []manifest.Value{{Pointer: "/either/0", Text: "/e"}, {Pointer: "/opts/path", Text: "/o"}, {Pointer: "/paths/0", Text: "/p0"},
		{Pointer: "/paths/1", Text: "/p1"}, {Pointer: "/run/cwd", Text: "/c"}, {Pointer: "/target", Text: "/t"}}
	if !reflect.DeepEqual(f.Paths, wantPaths) || len(f.Commands) != 1 || f.Commands[0].Cwd == nil || len(f.Unclassified) != 0 {
		t.Errorf("shapes found %+v", f)
	}

	// Leaving one out leaves the tool unclassified.
	delete(params, "/either/*")
	if cl, _ := deriveOne(t, shapes, Overlay{"shapes": {SideEffects: manifest.SideEffectRead, Params: params}}); cl.Complete() {
		t.Error("an anyOf branch left unclassified, and the tool is classified")
	}
}

// The classes assert nothing: the derived schema validates what the tool's did, an open
// object included.
func TestOverlayParamsKeepValidation(t *testing.T) {
	open := &mcpsdk.Tool{Name: "open", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","format":"text","maxLength":3}}}`)}
	doc, left, err := Derive("fs", []Pin{pinOf(t, open, "act")}, Overlay{"open": {SideEffects: manifest.SideEffectRead,
		Params: map[string]string{"/q": "text", "/*": "text"}}})
	if err != nil || len(left) > 0 {
		t.Fatal(err, left)
	}
	d, err := manifest.Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := d.ParametersSchema("tool.mcp.fs.act")
	if !s.Classes().Complete() {
		t.Errorf("an open object with /* text: unclassified %v", s.Classes().Unclassified())
	}
	for v, want := range map[string]bool{`{"q":"ab"}`: true, `{"q":"abcd"}`: false, `{"x":{"y":[1]}}`: true, `{"q":1}`: false} {
		if got := s.ValidateJSON([]byte(v), "params") == nil; got != want {
			t.Errorf("%s: valid %v, want %v", v, got, want)
		}
	}
}

// An overlay's params that cannot be applied leave the tool out, naming the pointer and the
// rule.
func TestOverlayParamsProblems(t *testing.T) {
	shared := &mcpsdk.Tool{Name: "shared", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
	  "properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"},"c":{"$ref":"#tt"}},"$defs":{"s":{"type":"string"},"t":{"$anchor":"tt","type":"string"}}}`)}
	for params, want := range map[string]string{
		`{"/nothing":"path"}`:       `params["/nothing"]: reaches no part`,
		`{"/a":"path","/b":"text"}`: `params["/b"]: gives a schema another pointer classed path`,
		`{"/c":"path"}`:             `params["/c"]: passes a $ref that is not a pointer into the same schema`,
		`{"/a/x":"path"}`:           `params["/a/x"]: reaches no part`,
		`{"/a":"path","/b":"path"}`: "",
	} {
		var p map[string]string
		_ = json.Unmarshal([]byte(params), &p)
		_, rule := deriveOne(t, shared, Overlay{"shared": {SideEffects: manifest.SideEffectRead, Params: p}})
		if want == "" && rule != "" || want != "" && !strings.Contains(rule, want) {
			t.Errorf("%s: %q, want %q", params, rule, want)
		}
	}
}

// ReadOverlay checks the params strictly, naming the tool and the pointer of each problem.
func TestReadOverlayParams(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		p := OverlayFile(dir, "fs")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"move_file":{"side_effects":"write","params":{"/source":"path","/destination":"path"}}}`)
	o, err := ReadOverlay(dir, "fs")
	if err != nil || o["move_file"].Params["/source"] != "path" {
		t.Fatalf("%v %v", o, err)
	}
	for body, want := range map[string]string{
		`{"t":{"side_effects":"read","params":{"source":"path"}}}`: `"t".params["source"]: the key must be a JSON pointer`,
		`{"t":{"side_effects":"read","params":{"/a~2":"path"}}}`:   `"t".params["/a~2"]: the key must escape ~`,
		`{"t":{"side_effects":"read","params":{"/a":"file"}}}`:     `"t".params["/a"] must be one of path, cwd, command, command-input, text`,
		`{"t":{"side_effects":"read","params":{"/a":1}}}`:          `not a JSON object of tool classes`,
		`{"t":{"side_effects":"read","param":{"/a":"path"}}}`:      `not a JSON object of tool classes`,
	} {
		write(body)
		if _, err := ReadOverlay(dir, "fs"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// FuzzOverlayParams: applying an overlay's param class to any schema never panics, and the
// derived schema validates exactly what the tool's own schema validates: classes assert
// nothing.
func FuzzOverlayParams(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"}}}`, "/a", uint8(0), `{"a":"x"}`)
	f.Add(`{"type":"object","additionalProperties":{"type":"array","items":{"type":"string","format":"uri"}}}`, "/*/*", uint8(1), `{"k":["a"]}`)
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, "/a", uint8(2), `{"a":3}`)
	f.Add(`{"type":"array","prefixItems":[{"type":"string","format":"path"}],"unevaluatedItems":false}`, "/*", uint8(3), `["a","b"]`)
	classes := []string{"path", "cwd", "command", "command-input", "text"}
	f.Fuzz(func(t *testing.T, schema, ptr string, class uint8, value string) {
		if !json.Valid([]byte(schema)) || !json.Valid([]byte(value)) {
			return
		}
		tool := &mcpsdk.Tool{Name: "t", InputSchema: json.RawMessage(schema)}
		def, err := DefinitionOf(tool).Canonical()
		if err != nil {
			return // no canonical form (duplicate members): no pin, no tool
		}
		pin := Pin{Tool: tool.Name, Action: "act", Hash: Hash(def), Definition: def}
		plain, left, err := Derive("fs", []Pin{pin}, nil)
		if err != nil || len(left) > 0 {
			return
		}
		if checkPointer(ptr) != nil {
			return
		}
		o := Overlay{"t": {SideEffects: manifest.SideEffectRead, Params: map[string]string{ptr: classes[int(class)%len(classes)]}}}
		classed, left, err := Derive("fs", []Pin{pin}, o)
		if err != nil || len(left) > 0 {
			return
		}
		a, errA := manifest.Load(plain)
		b, errB := manifest.Load(classed)
		if errA != nil || errB != nil {
			t.Fatalf("derived manifests do not load: %v %v", errA, errB)
		}
		va := a.ParametersSchema("tool.mcp.fs.act").ValidateJSON([]byte(value), "params") == nil
		vb := b.ParametersSchema("tool.mcp.fs.act").ValidateJSON([]byte(value), "params") == nil
		if va != vb {
			t.Fatalf("classing %s changed validation of %s: %v became %v", ptr, value, va, vb)
		}
		b.ParametersSchema("tool.mcp.fs.act").Classes().Find(nil)
	})
}
