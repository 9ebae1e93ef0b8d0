package yamljson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// manifestYAML is a manifest as an author would write it in YAML, using the
// forms manifests need: block and flow collections, a literal and a folded
// block, quoted strings, integers and a float, booleans and comments.
const manifestYAML = `# capgate manifest for the files app
app_id: com.example.files
version: 1.4.0
name: "Files"
description: |
  Reads and writes files in the user's
  workspace folder.

  Nothing outside it.
publisher:
  name: Example Corp
  contact: security@example.com
capabilities:
  - id: files.read
    title: Read a file
    description: >-
      Returns the contents of one file,
      as UTF-8 text.
    risk: low
    undo_window_ms: 0
    parameters:
      type: object
      properties:
        path:
          type: string
          description: Path relative to the workspace.
          maxLength: 4096
          pattern: '^[^\0]+$'
        offset: {type: integer, minimum: 0}
      required: [path]
      additionalProperties: false
  - id: files.delete
    title: "Delete a file \u2014 undoable"
    risk: high
    confirm: true
    undo_window_ms: 30000
    parameters:
      type: object
      properties:
        path: {type: string}
        recursive: {type: boolean, default: false}
      required:
        - path
    limits:
      rate_per_minute: 10
      max_bytes: 1.5e6
      ratio: 0.75
permissions: [fs.read, fs.write]
tags: ["yes", 'no', on]   # on is a string in YAML 1.2
empty: null
`

// manifestJSON is manifestYAML written by hand as JSON, members in the same
// order.
const manifestJSON = `{
  "app_id": "com.example.files",
  "version": "1.4.0",
  "name": "Files",
  "description": "Reads and writes files in the user's\nworkspace folder.\n\nNothing outside it.\n",
  "publisher": {"name": "Example Corp", "contact": "security@example.com"},
  "capabilities": [
    {
      "id": "files.read",
      "title": "Read a file",
      "description": "Returns the contents of one file, as UTF-8 text.",
      "risk": "low",
      "undo_window_ms": 0,
      "parameters": {
        "type": "object",
        "properties": {
          "path": {
            "type": "string",
            "description": "Path relative to the workspace.",
            "maxLength": 4096,
            "pattern": "^[^\\0]+$"
          },
          "offset": {"type": "integer", "minimum": 0}
        },
        "required": ["path"],
        "additionalProperties": false
      }
    },
    {
      "id": "files.delete",
      "title": "Delete a file — undoable",
      "risk": "high",
      "confirm": true,
      "undo_window_ms": 30000,
      "parameters": {
        "type": "object",
        "properties": {
          "path": {"type": "string"},
          "recursive": {"type": "boolean", "default": false}
        },
        "required": ["path"]
      },
      "limits": {"rate_per_minute": 10, "max_bytes": 1.5e6, "ratio": 0.75}
    }
  ],
  "permissions": ["fs.read", "fs.write"],
  "tags": ["yes", "no", "on"],
  "empty": null
}`

func TestManifestEquivalence(t *testing.T) {
	got, err := Convert([]byte(manifestYAML))
	if err != nil {
		t.Fatal(err)
	}
	var gotC, wantC bytes.Buffer
	if err := json.Compact(&gotC, got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Compact(&wantC, []byte(manifestJSON)); err != nil {
		t.Fatal(err)
	}

	t.Run("same values", func(t *testing.T) {
		var g, w any
		if err := json.Unmarshal(gotC.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(wantC.Bytes(), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("values differ\n got %s\nwant %s", gotC.Bytes(), wantC.Bytes())
		}
	})

	// Compacted, the two texts are equal byte for byte only if members come
	// in the same order and numbers are written the same way.
	t.Run("same order and number text", func(t *testing.T) {
		if !bytes.Equal(gotC.Bytes(), wantC.Bytes()) {
			t.Fatalf("texts differ\n got %s\nwant %s", gotC.Bytes(), wantC.Bytes())
		}
		if !bytes.Equal(got, gotC.Bytes()) {
			t.Errorf("Convert's output is not compact: %s", got)
		}
	})
}
