package files

// Limits of the files app, each with its reason. The parameter schemas in Manifest repeat
// the ones agents see; a test checks that they agree.
const (
	// MaxPathBytes is PATH_MAX on Linux: the longest path the kernel takes in one call.
	MaxPathBytes = 4096

	// MaxListEntries bounds the entries list_directory returns, and so the size of its
	// answer (about 100 bytes an entry). A larger folder is answered with the first
	// MaxListEntries entries the filesystem gives, sorted, and "truncated": true.
	MaxListEntries = 10000

	// DefaultReadBytes and MaxReadBytes bound one read_file: a page an agent can use, and at
	// most 1 MiB (1.4 MiB as base64) in one answer. Larger files are read page by page.
	DefaultReadBytes = 64 << 10
	MaxReadBytes     = 1 << 20

	// MaxOffset is the largest offset read_file takes: the largest integer JSON carries
	// exactly (2^53 - 1).
	MaxOffset = 1<<53 - 1

	// MaxContentBytes bounds the bytes one write_file or create_file writes. The gateway
	// parses params strictly within manifest.MaxManifestBytes (4 MiB); 2 MiB of content is
	// 2.7 MiB as base64 and leaves room for JSON escapes.
	MaxContentBytes = 2 << 20

	// maxContentChars is the schema's maxLength for content: the base64 length of
	// MaxContentBytes. The byte bound is checked after decoding.
	maxContentChars = (MaxContentBytes + 2) / 3 * 4

	// MaxUndoFileBytes bounds the previous bytes kept for one undo: a write over, or a
	// delete of, a larger file is refused rather than made unrecoverable.
	MaxUndoFileBytes = 64 << 20

	// MaxUndoBytes and MaxUndoRecords bound the undo area. When it is full, changes are
	// refused until earlier windows end: a promised undo is never dropped to make room.
	MaxUndoBytes   = 512 << 20
	MaxUndoRecords = 4096

	// maxRecordBytes bounds one undo record's metadata file when it is read back.
	maxRecordBytes = 64 << 10

	// copyChunk is the unit of copies, between which the call's context is checked.
	copyChunk = 256 << 10

	// listBatch is how many names list_directory reads at a time.
	listBatch = 256
)

// MaxWatchEntries bounds a watch's scan of the folder: a scan reads every entry's metadata
// every WatchInterval, and a folder larger than this is not watched (ErrTooManyEntries).
const MaxWatchEntries = 20000
