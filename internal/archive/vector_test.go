package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestVector pins the content digest, version 1, byte for byte: the stream is built here by hand
// from the documented encoding, with literal bytes for every number, and must equal both the
// digest Open computes and the fixed values in testdata (which other implementations use).
func TestVector(t *testing.T) {
	ents := []ent{
		reg("manifest.json", `{"app_id":"org.example.hello"}`),
		reg("README.md", "hello\n"),
		exe("bin/hello", "#!/bin/sh\necho hello\n"),
		reg("empty", ""),
	}
	sum := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	var stream bytes.Buffer
	stream.WriteString("capgate-package-v1\n")
	for _, r := range [][]byte{
		{0, 0, 0, 9}, []byte("README.md"), {0, 0, 0x01, 0xa4}, {0, 0, 0, 0, 0, 0, 0, 6}, sum("hello\n"),
		{0, 0, 0, 9}, []byte("bin/hello"), {0, 0, 0x01, 0xed}, {0, 0, 0, 0, 0, 0, 0, 21}, sum("#!/bin/sh\necho hello\n"),
		{0, 0, 0, 5}, []byte("empty"), {0, 0, 0x01, 0xa4}, {0, 0, 0, 0, 0, 0, 0, 0}, sum(""),
	} {
		stream.Write(r)
	}
	h := sha256.Sum256(stream.Bytes())
	want := "sha256:" + hex.EncodeToString(h[:])

	for name, path := range map[string]string{"folder": folderPath(t, ents...), "tar.gz": tarGzPath(t, ents...)} {
		p := mustOpen(t, path)
		if got := p.Digest(); got != want {
			t.Errorf("%s: Digest = %s, want %s", name, got, want)
		}
		var enc bytes.Buffer
		p.writeEncoding(&enc)
		if !bytes.Equal(enc.Bytes(), stream.Bytes()) {
			t.Errorf("%s: encoding =\n%x\nwant\n%x", name, enc.Bytes(), stream.Bytes())
		}
	}

	golden := map[string]string{
		"testdata/vector-v1.hex":    hex.EncodeToString(stream.Bytes()) + "\n",
		"testdata/vector-v1.digest": want + "\n",
	}
	for file, content := range golden {
		if *update {
			if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(b) != content {
			t.Errorf("%s =\n%s\nwant\n%s", file, strings.TrimSpace(string(b)), strings.TrimSpace(content))
		}
	}
	if stream.Len() != 186 {
		t.Errorf("stream is %d bytes, the package doc says 186", stream.Len())
	}
}
