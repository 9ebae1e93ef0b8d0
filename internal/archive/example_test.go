package archive_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/archive"
)

// The test vector of the package documentation, as a folder.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "pkg")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for name, body := range map[string]string{
		"manifest.json": `{"app_id":"org.example.hello"}`,
		"README.md":     "hello\n",
		"bin/hello":     "#!/bin/sh\necho hello\n",
		"empty":         "",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.Chmod(filepath.Join(dir, "bin", "hello"), 0o755)

	pkg, err := archive.Open(dir)
	if err != nil {
		log.Fatal(err) // names the entry and the rule, e.g. `entry "l": entry type not allowed: ...`
	}
	fmt.Println(len(pkg.Manifest), "bytes of manifest.json,", len(pkg.Files), "files")
	fmt.Println(pkg.Digest())
	f, _ := pkg.File("README.md")
	fmt.Printf("%q rule broken\n", pkg.CheckReference("README.md", f.Digest))
	// Output:
	// 30 bytes of manifest.json, 3 files
	// sha256:c716d48acb1432ed623c42804af87ef24ee40bc59d06995ffd71b9e08dbc1a22
	// "" rule broken
}
