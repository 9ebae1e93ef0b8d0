package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestFolderAndTarGzAgree(t *testing.T) {
	ents := baseEnts()
	folder := mustOpen(t, folderPath(t, ents...))
	tgz := mustOpen(t, tarGzPath(t, ents...))
	if !reflect.DeepEqual(folder, tgz) {
		t.Fatalf("folder and tar.gz differ:\n%+v\n%+v", folder, tgz)
	}
	if string(folder.Manifest) != ents[0].body {
		t.Errorf("manifest = %q", folder.Manifest)
	}
	var paths []string
	for _, f := range folder.Files {
		paths = append(paths, f.Path)
	}
	want := []string{"README.md", "bin/hello", "empty", "lib/x/data.bin", "x/manifest.json", "ünïcode.txt"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
	if f, _ := folder.File("bin/hello"); f.Mode != 0o755 || f.Size != 21 {
		t.Errorf("bin/hello = %+v", f)
	}
	if f, _ := folder.File("README.md"); f.Mode != 0o644 ||
		f.Digest != "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" {
		t.Errorf("README.md = %+v", f)
	}
	if _, ok := folder.File("manifest.json"); ok {
		t.Error("the manifest is listed as a File")
	}
}

// bothDigests opens ents as a folder and as a .tar.gz and returns the digest, failing if the two
// disagree.
func bothDigests(t *testing.T, ents []ent) string {
	t.Helper()
	a := mustOpen(t, folderPath(t, ents...)).Digest()
	b := mustOpen(t, tarGzPath(t, ents...)).Digest()
	if a != b {
		t.Fatalf("folder digest %s != tar.gz digest %s", a, b)
	}
	return a
}

func TestDigestChanges(t *testing.T) {
	base := bothDigests(t, baseEnts())
	for _, tc := range []struct {
		name string
		edit func([]ent) []ent
	}{
		{"one byte of content", func(es []ent) []ent { es[1] = reg("README.md", "hellp\n"); return es }},
		{"executable bit set", func(es []ent) []ent { es[1].hdr.Mode = 0o744; return es }},
		{"executable bit cleared", func(es []ent) []ent { es[2].hdr.Mode = 0o644; return es }},
		{"file renamed", func(es []ent) []ent { es[1].hdr.Name = "README.txt"; return es }},
		{"file moved to a folder", func(es []ent) []ent { es[1].hdr.Name = "doc/README.md"; return es }},
		{"empty file added", func(es []ent) []ent { return append(es, reg("empty2", "")) }},
		{"empty file removed", func(es []ent) []ent { return slices.Delete(es, 3, 4) }},
		{"nested manifest changed", func(es []ent) []ent { es[5] = reg("x/manifest.json", "{ }"); return es }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bothDigests(t, tc.edit(baseEnts())); got == base {
				t.Errorf("digest unchanged: %s", got)
			}
		})
	}
}

func TestDigestInvariant(t *testing.T) {
	base := bothDigests(t, baseEnts())
	for _, tc := range []struct {
		name string
		edit func([]ent) []ent
	}{
		{"empty folder added", func(es []ent) []ent { return append(es, dirEnt("nothing"), dirEnt("lib/x/y")) }},
		{"explicit folder entries", func(es []ent) []ent { return append([]ent{dirEnt("bin"), dirEnt("lib"), dirEnt("lib/x")}, es...) }},
		{"entry order reversed", func(es []ent) []ent { slices.Reverse(es); return es }},
		{"group and other bits", func(es []ent) []ent { es[1].hdr.Mode = 0o600; es[2].hdr.Mode = 0o711; return es }},
		{"manifest content", func(es []ent) []ent { es[0] = reg("manifest.json", `{"app_id":"x.y"}`); return es }},
		{"mtimes, owners", func(es []ent) []ent {
			for i := range es {
				es[i].hdr.ModTime = time.Unix(int64(i)*1000, 0)
				es[i].hdr.Uid, es[i].hdr.Gid = 1000+i, 2000+i
				es[i].hdr.Uname, es[i].hdr.Gname = "someone", "staff"
			}
			return es
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bothDigests(t, tc.edit(baseEnts())); got != base {
				t.Errorf("digest changed: %s, want %s", got, base)
			}
		})
	}

	t.Run("folder mtimes", func(t *testing.T) {
		dir := folderPath(t, baseEnts()...)
		if err := os.Chtimes(filepath.Join(dir, "README.md"), time.Unix(1, 0), time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		if got := mustOpen(t, dir).Digest(); got != base {
			t.Errorf("digest changed: %s", got)
		}
	})
	t.Run("gzip header, record padding, git archive comment", func(t *testing.T) {
		glob := ent{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
			PAXRecords: map[string]string{"comment": "0123456789abcdef0123456789abcdef01234567"}}}
		raw := tarBytes(t, append([]ent{glob}, baseEnts()...)...)
		raw = append(raw, make([]byte, 10240-len(raw)%10240)...) // GNU tar fills the last record
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Name, zw.Comment, zw.ModTime = "pkg.tar", "a comment", time.Unix(12345, 0)
		zw.Write(raw)
		zw.Close()
		if got := mustOpen(t, writeTemp(t, buf.Bytes())).Digest(); got != base {
			t.Errorf("digest changed: %s", got)
		}
	})
}

func TestCheckReference(t *testing.T) {
	p := mustOpen(t, tarGzPath(t, append(baseEnts(), reg("sbom.spdx.json", `{"spdxVersion":"SPDX-2.3"}`))...))
	sbom, ok := p.File("sbom.spdx.json")
	if !ok {
		t.Fatal("no sbom file")
	}
	other, _ := p.File("README.md")
	for _, tc := range []struct {
		name, path, digest string
		ok                 bool
	}{
		{"ok", "sbom.spdx.json", sbom.Digest, true},
		{"missing file", "sbom.json", sbom.Digest, false},
		{"wrong digest", "sbom.spdx.json", other.Digest, false},
		{"malformed digest: upper case", "sbom.spdx.json", "sha256:" + upper(sbom.Digest[7:]), false},
		{"malformed digest: no prefix", "sbom.spdx.json", sbom.Digest[7:], false},
		{"malformed digest: short", "sbom.spdx.json", sbom.Digest[:70], false},
		{"malformed digest: sha512", "sbom.spdx.json", "sha512:" + sbom.Digest[7:], false},
		{"unclean path", "./sbom.spdx.json", sbom.Digest, false},
		{"the manifest", "manifest.json", sbom.Digest, false},
		{"a folder", "bin", sbom.Digest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule := p.CheckReference(tc.path, tc.digest)
			if (rule == "") != tc.ok {
				t.Errorf("CheckReference(%q, %q) = %q, want ok=%v", tc.path, tc.digest, rule, tc.ok)
			}
		})
	}
}

func upper(s string) string { return string(bytes.ToUpper([]byte(s))) }
