package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

var manifestEnt = reg("manifest.json", "{}")

// withManifest prefixes ents with a valid manifest.
func withManifest(ents ...ent) []ent { return append([]ent{manifestEnt}, ents...) }

// setTypeflag rewrites the typeflag of the tar header block at offset off and fixes its
// checksum, for entry types tar.Writer will not write.
func setTypeflag(raw []byte, off int, flag byte) []byte {
	blk := raw[off : off+512]
	blk[156] = flag
	copy(blk[148:156], "        ")
	var sum int
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return raw
}

// headerOnly writes the header of a file whose content is never written: the reader must
// refuse on the header alone.
func headerOnly(t *testing.T, name string, size int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&manifestEnt.hdr)
	tw.Write([]byte(manifestEnt.body))
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	return append(buf.Bytes(), make([]byte, 1024)...)
}

func checkRefusal(t *testing.T, err error, kind error, path string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Open succeeded, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("Open: %v, want %v", err, kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Open: %T is not an *Error", err)
	}
	if e.Path != path {
		t.Errorf("Error.Path = %q, want %q (%v)", e.Path, path, err)
	}
}

func TestRefuseTarGz(t *testing.T) {
	long := strings.Repeat("d/", MaxPathBytes/2) + "f"
	many := []ent{manifestEnt}
	for i := range MaxEntries {
		many = append(many, reg("f"+strconv.Itoa(i), ""))
	}
	valid := tarBytes(t, withManifest(reg("a", "x"))...)
	validGz := gz(t, valid)
	for _, tc := range []struct {
		name string
		raw  func(t *testing.T) []byte // the whole file
		kind error
		path string
	}{
		// entry types
		{"symlink", ents(withManifest(special("l", tar.TypeSymlink, "/etc/passwd"))...), ErrEntryType, "l"},
		{"hard link", ents(withManifest(reg("a", "x"), special("l", tar.TypeLink, "a"))...), ErrEntryType, "l"},
		{"char device", ents(withManifest(special("c", tar.TypeChar, ""))...), ErrEntryType, "c"},
		{"block device", ents(withManifest(special("b", tar.TypeBlock, ""))...), ErrEntryType, "b"},
		{"fifo", ents(withManifest(special("p", tar.TypeFifo, ""))...), ErrEntryType, "p"},
		{"contiguous file", patched(tar.TypeCont), ErrEntryType, "a"},
		{"GNU sparse file", patched(tar.TypeGNUSparse), ErrEntryType, "a"},
		{"PAX sparse file", paxSparse, ErrEntryType, "real"},
		{"global header with a path", ents(append([]ent{{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "g",
			PAXRecords: map[string]string{"path": "evil"}}}}, withManifest(reg("a", "x"))...)...), ErrEntryType, ""},
		// paths
		{"absolute", ents(withManifest(reg("/etc/x", ""))...), ErrPath, "/etc/x"},
		{"dot-dot", ents(withManifest(reg("../x", ""))...), ErrPath, "../x"},
		{"inner dot-dot", ents(withManifest(reg("a/../../x", ""))...), ErrPath, "a/../../x"},
		{"dot prefix", ents(withManifest(reg("./x", ""))...), ErrPath, "./x"},
		{"inner dot", ents(withManifest(reg("a/./x", ""))...), ErrPath, "a/./x"},
		{"empty segment", ents(withManifest(reg("a//x", ""))...), ErrPath, "a//x"},
		{"trailing slash on a file", func(t *testing.T) []byte {
			raw := tarBytes(t, manifestEnt, reg("ab", ""))
			raw[512*2+1] = '/' // the second header's name: "ab" becomes "a/"
			return gz(t, setTypeflag(raw, 512*2, tar.TypeReg))
		}, ErrPath, "a/"},
		{"dot folder", ents(withManifest(dirEnt("."))...), ErrPath, "."},
		{"backslash", ents(withManifest(reg(`a\..\x`, ""))...), ErrPath, `a\..\x`},
		{"not NFC", ents(withManifest(reg("e\u0301", ""))...), ErrPath, "e\u0301"},
		{"kelvin sign is not NFC", ents(withManifest(reg("\u212a", ""))...), ErrPath, "\u212a"},
		{"control character", ents(withManifest(reg("a\x1b[31m", ""))...), ErrPath, "a\x1b[31m"},
		{"not UTF-8", ents(withManifest(reg("a\xff", ""))...), ErrPath, "a\xff"},
		{"path too long", ents(withManifest(reg(long, ""))...), ErrPath, long[:MaxPathBytes]},
		{"segment too long", ents(withManifest(reg(strings.Repeat("n", MaxNameBytes+1), ""))...), ErrPath, strings.Repeat("n", MaxNameBytes+1)},
		// collisions
		{"duplicate file", ents(withManifest(reg("a", "1"), reg("a", "2"))...), ErrCollision, "a"},
		{"duplicate manifest", ents(withManifest(manifestEnt)...), ErrCollision, "manifest.json"},
		{"duplicate folder", ents(withManifest(dirEnt("d"), dirEnt("d"))...), ErrCollision, "d"},
		{"case", ents(withManifest(reg("A", ""), reg("a", ""))...), ErrCollision, "a"},
		{"case of a parent", ents(withManifest(reg("A/x", ""), reg("a/y", ""))...), ErrCollision, "a/y"},
		{"full case folding", ents(withManifest(reg("straße", ""), reg("STRASSE", ""))...), ErrCollision, "STRASSE"},
		{"file then under it", ents(withManifest(reg("a", ""), reg("a/b", ""))...), ErrCollision, "a/b"},
		{"under it then file", ents(withManifest(reg("a/b", ""), reg("a", ""))...), ErrCollision, "a"},
		{"file then folder", ents(withManifest(reg("a", ""), dirEnt("a"))...), ErrCollision, "a"},
		// manifest
		{"no manifest", ents(reg("a", ""), reg("x/manifest.json", "{}")), ErrManifest, ""},
		{"both manifests", ents(withManifest(reg("manifest.yaml", "a: 1"))...), ErrManifest, "manifest.yaml"},
		{"manifest up to case", ents(withManifest(reg("Manifest.yaml", "a: 1"))...), ErrManifest, "Manifest.yaml"},
		{"manifest.json up to case", ents(withManifest(reg("Manifest.JSON", "{}"))...), ErrManifest, "Manifest.JSON"},
		{"only manifest.json up to case", ents(reg("manifest.JSON", "{}")), ErrManifest, "manifest.JSON"},
		{"manifest is a folder", ents(dirEnt("manifest.json"), reg("manifest.json/x", "")), ErrManifest, "manifest.json"},
		{"empty archive", ents(), ErrManifest, ""},
		// limits
		{"too many entries", ents(many...), ErrLimit, "f9999"},
		{"file too large", gzipped(func(t *testing.T) []byte { return headerOnly(t, "big", MaxContentBytes) }), ErrLimit, "big"},
		{"manifest too large", gzipped(func(t *testing.T) []byte {
			return append(tarHeaderOnly(t, "manifest.json", MaxManifestBytes+1), make([]byte, 1024)...)
		}), ErrLimit, "manifest.json"},
		// format
		{"empty file", func(*testing.T) []byte { return nil }, ErrFormat, ""},
		{"plain tar", func(*testing.T) []byte { return valid }, ErrFormat, ""},
		{"gzip of not a tar", gzipped(func(*testing.T) []byte { return []byte(strings.Repeat("not a tar ", 100)) }), ErrFormat, ""},
		{"truncated gzip", func(*testing.T) []byte { return validGz[:len(validGz)-4] }, ErrFormat, ""},
		{"bad gzip checksum", func(*testing.T) []byte {
			b := bytes.Clone(validGz)
			b[len(b)-8] ^= 1
			return b
		}, ErrFormat, ""},
		{"bytes after gzip", func(*testing.T) []byte { return append(bytes.Clone(validGz), 'x') }, ErrFormat, ""},
		{"zero bytes after gzip", func(*testing.T) []byte { return append(bytes.Clone(validGz), 0, 0) }, ErrFormat, ""},
		{"second gzip member", func(t *testing.T) []byte { return append(bytes.Clone(validGz), gz(t, valid)...) }, ErrFormat, ""},
		{"data after tar end", gzipped(func(*testing.T) []byte { return append(bytes.Clone(valid), "trailing"...) }), ErrFormat, ""},
		{"tar after tar", gzipped(func(*testing.T) []byte { return append(bytes.Clone(valid), valid...) }), ErrFormat, ""},
		{"no end marker", gzipped(func(*testing.T) []byte { return valid[:len(valid)-1024] }), ErrFormat, ""},
		{"half an end marker", gzipped(func(*testing.T) []byte { return valid[:len(valid)-512] }), ErrFormat, ""},
		{"truncated content", gzipped(func(t *testing.T) []byte { return headerOnly(t, "a", 2000)[:512*3] }), ErrFormat, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(writeTemp(t, tc.raw(t)))
			checkRefusal(t, err, tc.kind, tc.path)
		})
	}
}

func ents(es ...ent) func(*testing.T) []byte {
	return func(t *testing.T) []byte { return gz(t, tarBytes(t, es...)) }
}

func gzipped(raw func(*testing.T) []byte) func(*testing.T) []byte {
	return func(t *testing.T) []byte { return gz(t, raw(t)) }
}

// paxSparse is a package holding a PAX (format 1.0) sparse file "real", written by hand since
// tar.Writer drops GNU.sparse records: a PAX header entry, then the file, whose data starts
// with the sparse map.
func paxSparse(t *testing.T) []byte {
	var recs string
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", "real"}, {"GNU.sparse.realsize", "1"}} {
		n := len(kv[0]) + len(kv[1]) + 3
		n += len(strconv.Itoa(n + len(strconv.Itoa(n))))
		recs += fmt.Sprintf("%d %s=%s\n", n, kv[0], kv[1])
	}
	data := "1\n0\n1\n" + strings.Repeat("\x00", 512-6) + "x"
	raw := tarBytes(t, manifestEnt, reg("PaxHeaders/s", recs), reg("GNUSparseFile.0/real", data))
	return gz(t, setTypeflag(raw, 512*2, tar.TypeXHeader))
}

// patched is a package whose entry "a" has the typeflag flag.
func patched(flag byte) func(*testing.T) []byte {
	return func(t *testing.T) []byte {
		a := reg("a", "")
		a.hdr.Format = tar.FormatGNU
		raw := tarBytes(t, a, manifestEnt)
		return gz(t, setTypeflag(raw, 0, flag))
	}
}

func tarHeaderOnly(t *testing.T, name string, size int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRefuseBomb: a stream of zeros after the end marker is padding, accepted in small amounts,
// but the decompressed stream is refused as soon as it passes MaxArchiveBytes, before the rest
// of the file is read.
func TestRefuseBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 320 MiB")
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(tarBytes(t, withManifest(reg("a", "x"))...))
	zeros := make([]byte, 1<<20)
	for range MaxArchiveBytes>>20 + 1 {
		zw.Write(zeros)
	}
	zw.Close()
	if buf.Len() > 1<<20 {
		t.Fatalf("bomb is %d bytes compressed", buf.Len())
	}
	_, err := Open(writeTemp(t, buf.Bytes()))
	checkRefusal(t, err, ErrLimit, "")
}

func TestPathRule(t *testing.T) {
	for _, p := range []string{"a", "a/b", "A.b-c_d", "ünï", "a b", "日本/語", ".hidden", "..x", "x..", strings.Repeat("n", MaxNameBytes)} {
		if rule := pathRule(p); rule != "" {
			t.Errorf("pathRule(%q) = %q, want valid", p, rule)
		}
	}
	for _, p := range []string{"", "/", "a/", "/a", "a\x00b", "a\tb", "a\u00a0b", "a\u200bb", "a\u202eb", "a\\b", ".", "..", "a/.", "a/..", "a//b"} {
		if rule := pathRule(p); rule == "" {
			t.Errorf("pathRule(%q) is valid, want a refusal", p)
		}
	}
}
