package yamljson_test

import (
	"fmt"

	"github.com/capgate/capgate/internal/yamljson"
)

func ExampleConvert() {
	manifest := `app_id: com.example.files
version: 1.4.0          # a string: not a number in YAML 1.2
undo_window_ms: 30000
ratio: 1.50             # written as is, never through float64
description: |
  Reads files.
required: [path]
`
	out, err := yamljson.Convert([]byte(manifest))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))

	// Errors say where and by which rule, never what the value was.
	_, err = yamljson.Convert([]byte("capabilities:\n- id: a\n  id: b\n"))
	fmt.Println(err)
	// Output:
	// {"app_id":"com.example.files","version":"1.4.0","undo_window_ms":30000,"ratio":1.50,"description":"Reads files.\n","required":["path"]}
	// yaml: 3:3: capabilities[0]: duplicate mapping key
}
