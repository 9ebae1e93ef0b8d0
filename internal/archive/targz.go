package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// gzipMagic opens every gzip stream (RFC 1952, ID1 ID2).
var gzipMagic = [2]byte{0x1f, 0x8b}

// endMarkerBytes is the size of tar's end-of-archive marker: two zero blocks.
const endMarkerBytes = 2 * 512

// openTarGz reads the package in the gzip-compressed tar file f, into hashes: nothing is
// written to disk. The gzip stream must be a single member ending the file, holding one tar
// archive that ends with its end-of-archive marker, followed by nothing but zero bytes.
func openTarGz(f *os.File, size int64, out *os.Root) (*Package, error) {
	if size > MaxCompressedBytes {
		return nil, refuse("", ErrLimit, fmt.Sprintf("file is larger than %d bytes", int64(MaxCompressedBytes)))
	}
	compressed := &io.LimitedReader{R: f, N: MaxCompressedBytes + 1}
	// A bufio.Reader is a flate.Reader, so gzip reads from it without reading ahead, and what
	// remains in it after the gzip stream is what followed the stream in the file.
	br := bufio.NewReader(compressed)
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, streamError(err, compressed, nil)
	}
	gz.Multistream(false)
	stream := &io.LimitedReader{R: gz, N: MaxArchiveBytes + 1}
	fail := func(err error) error { return streamError(err, compressed, stream) }

	tr := tar.NewReader(stream)
	b := newBuilder(func(p string, err error) error {
		e := fail(err)
		if e, ok := e.(*Error); ok && e.Path == "" {
			e.Path = p
		}
		return e
	})
	b.out = out
	for {
		before := stream.N
		hdr, err := tr.Next()
		if err == io.EOF && stream.N > 0 {
			// Next has skipped the previous entry's padding (under 512 bytes) and read zero,
			// one or two zero blocks: only two are a real end, the rest a truncated archive.
			if before-stream.N < endMarkerBytes {
				return nil, refuse("", ErrFormat, "tar archive has no end-of-archive marker")
			}
			break
		}
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			// Only with GODEBUG=tarinsecurepath=0; the path rules below refuse every such
			// name, and if one ever does not, it is still refused.
			if rule := pathRule(hdr.Name); rule != "" {
				return nil, refuse(hdr.Name, ErrPath, rule)
			}
			return nil, refuse(hdr.Name, ErrPath, "path is not local")
		}
		if err != nil {
			return nil, fail(err)
		}
		if err := addTarEntry(b, tr, hdr); err != nil {
			return nil, err
		}
	}
	if err := zerosToEnd(stream); err != nil || stream.N <= 0 {
		return nil, fail(err)
	}
	// gzip has now read its trailer and checked the CRC and length: the file must end here.
	switch _, err := br.ReadByte(); {
	case err == nil:
		return nil, refuse("", ErrFormat, "data after the end of the gzip stream (a second gzip member or trailing bytes)")
	case err != io.EOF:
		return nil, fail(err)
	}
	return b.finish()
}

// addTarEntry applies the entry rules to one tar header and reads its content.
func addTarEntry(b *builder, tr *tar.Reader, hdr *tar.Header) error {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			// Go's reader expands sparse files and renames them from GNU.sparse.name; other
			// readers may not, so the same archive could mean two things.
			return refuse(hdr.Name, ErrEntryType, "is a sparse file")
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg: // tar.Reader turns the legacy TypeRegA into TypeReg or TypeDir
		return b.file(hdr.Name, hdr.Mode&0o100 != 0, hdr.Size, tr)
	case tar.TypeDir:
		return b.dir(strings.TrimSuffix(hdr.Name, "/"))
	case tar.TypeXGlobalHeader:
		// git archive writes one global header with a "comment" record (the commit id).
		// Readers disagree on whether other global records (a path!) apply to later entries,
		// so only comments are accepted; the header is not an entry.
		for k := range hdr.PAXRecords {
			if k != "comment" {
				return refuse("", ErrEntryType, "a PAX global header with records other than comment")
			}
		}
		b.entries++
		if b.entries > MaxEntries {
			return refuse("", ErrLimit, fmt.Sprintf("more than %d entries", MaxEntries))
		}
		return nil
	default:
		return refuse(hdr.Name, ErrEntryType, "is "+tarTypeName(hdr.Typeflag)+", not a regular file or folder")
	}
}

func tarTypeName(flag byte) string {
	switch flag {
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	case tar.TypeFifo:
		return "a named pipe"
	case tar.TypeCont:
		return "a contiguous file"
	case tar.TypeGNUSparse:
		return "a sparse file"
	default:
		return fmt.Sprintf("of tar type %q", flag)
	}
}

// zerosToEnd reads the rest of the tar stream, which may only be the zero padding tar writers
// add to fill a record.
func zerosToEnd(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			if c != 0 {
				return errTrailingData
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

var errTrailingData = errors.New("data after the end of the tar archive")

// streamError turns a failure while reading the .tar.gz into the error Open returns: a limit
// if a limited reader ran dry (the cause of whatever the reader above it then reported),
// trailing data, a content size that does not match, or a corrupt stream.
func streamError(err error, compressed, stream *io.LimitedReader) error {
	switch {
	case compressed.N <= 0:
		return refuse("", ErrLimit, fmt.Sprintf("file is larger than %d bytes", int64(MaxCompressedBytes)))
	case stream != nil && stream.N <= 0:
		return refuse("", ErrLimit, fmt.Sprintf("decompressed archive is larger than %d bytes", int64(MaxArchiveBytes)))
	case errors.Is(err, errTrailingData):
		return refuse("", ErrFormat, "data after the end of the tar archive")
	case errors.Is(err, errSizeChanged):
		return refuse("", ErrFormat, "entry content is longer than its header says")
	}
	e := refuse("", ErrFormat, "corrupt or truncated gzip or tar stream")
	e.Cause = err
	return e
}
