package archive

import "github.com/capgate/capgate/manifest"

// Limits on what a package may hold. Each bounds the memory, time or disk a hostile package can
// cost the host before it is refused; none is close to what a real plugin ships.
const (
	// MaxContentBytes bounds the sum of the sizes of all files, the manifest included. Plugins
	// are a binary and a few data files; 256 MiB is several times the largest we expect.
	MaxContentBytes = 256 << 20

	// MaxArchiveBytes bounds the decompressed tar stream of a .tar.gz: the content plus room for
	// headers (512 bytes each, up to 511 bytes of padding, PAX and GNU long-name records) and
	// the zero padding tar writers add at the end. It is the compression-bomb guard: the gzip
	// stream is read through an io.LimitedReader and refused once it yields more than this,
	// whatever the ratio.
	MaxArchiveBytes = MaxContentBytes + 64<<20

	// MaxCompressedBytes bounds the .tar.gz file itself. Deflate never needs much more than the
	// input (stored blocks cost 5 bytes per 64 KiB; even fixed-Huffman coding of random bytes
	// stays under 1/8 more), so a larger file holds something other than a package, and
	// reading it would only burn time.
	MaxCompressedBytes = MaxArchiveBytes + MaxArchiveBytes/4

	// MaxEntries bounds the files and folders of a package (each tar header counts, each folder
	// entry counts). It bounds the per-entry work and the size of Package.Files.
	MaxEntries = 10_000

	// MaxPathBytes bounds a path inside the package. Linux's PATH_MAX is 4096 but an installed
	// package lives under a host folder, and Windows tools still trip over 260; 1 KiB leaves
	// room for both while bounding the per-entry work of the collision index.
	MaxPathBytes = 1024

	// MaxNameBytes bounds one segment of a path: NAME_MAX on the common file systems, so a
	// package that verifies here can also be unpacked.
	MaxNameBytes = 255

	// MaxManifestBytes bounds the manifest file, the only file Open keeps in memory. It is the
	// manifest parser's own bound: a larger manifest could never load.
	MaxManifestBytes = manifest.MaxManifestBytes
)
