package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// EncodingMagic opens the encoding the content digest hashes; the version in it changes with
// any change to the encoding.
const EncodingMagic = "capgate-package-v1\n"

// Digest returns the content digest of the package, "sha256:" and 64 lowercase hex digits: the
// SHA-256 of the encoding of Files described in the package documentation. The manifest is not
// part of it (the manifest carries it). Digest reads Files as they are; it panics if Files are
// not strictly increasing by Path, a Mode is not 0o644 or 0o755, a Size is negative or a
// Digest is malformed,
// none of which Open produces.
func (p *Package) Digest() string {
	h := sha256.New()
	p.writeEncoding(h)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeEncoding writes the encoding of p.Files to w, which must not fail (a hash).
func (p *Package) writeEncoding(w io.Writer) {
	buf := make([]byte, 0, 4+MaxPathBytes+4+8+sha256.Size)
	io.WriteString(w, EncodingMagic)
	for i, f := range p.Files {
		if i > 0 && p.Files[i-1].Path >= f.Path {
			panic(fmt.Sprintf("archive: Package.Files[%d] is not after Files[%d] in path order", i, i-1))
		}
		if f.Mode != 0o644 && f.Mode != 0o755 {
			panic(fmt.Sprintf("archive: Package.Files[%d].Mode is not 0o644 or 0o755", i))
		}
		if f.Size < 0 {
			panic(fmt.Sprintf("archive: Package.Files[%d].Size is negative", i))
		}
		sum, ok := decodeDigest(f.Digest)
		if !ok {
			panic(fmt.Sprintf("archive: Package.Files[%d].Digest is not sha256:<64 hex>", i))
		}
		buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(f.Path)))
		buf = append(buf, f.Path...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(f.Mode))
		buf = binary.BigEndian.AppendUint64(buf, uint64(f.Size))
		buf = append(buf, sum[:]...)
		w.Write(buf)
	}
}

func decodeDigest(d string) (sum [sha256.Size]byte, ok bool) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(h)); err != nil {
		return sum, false
	}
	return sum, true
}
