// Package archive reads plugin packages and computes their content digest.
//
// A plugin package is a folder, or a gzip-compressed tar file, holding exactly one manifest at
// its root, the signed manifest.json, and the plugin's content. The content digest covers
// every file but the manifest, because the manifest carries it (manifest.Manifest.Digest); the
// host recomputes it at install with Open and Package.Digest, pins that value in the lockfile,
// and refuses a manifest whose declared digest differs. The manifest's sbom_ref and
// provenance_ref name files of the package by path and digest: Package.CheckReference checks
// them.
//
// Open reads into hashes and never extracts: nothing is written to disk, and only the manifest
// is kept in memory.
//
// # The content digest, version 1
//
// The digest is "sha256:" followed by the 64 lowercase hex digits of the SHA-256 of this byte
// stream:
//
//  1. the 19 ASCII bytes "capgate-package-v1\n" (EncodingMagic, ending in one line feed);
//  2. then one record for every file of the package except the root manifest, in increasing
//     byte order of their paths (Go's string order, which is also UTF-8 code point order).
//
// A record is, with nothing between the fields:
//
//  1. the length in bytes of the path, as a big-endian uint32;
//  2. the path's bytes (UTF-8, slash-separated, no leading or trailing slash);
//  3. the mode, as a big-endian uint32: 0o755 (0x000001ED) if the file is executable by its
//     owner (permission bit 0o100), otherwise 0o644 (0x000001A4); no other bit counts;
//  4. the size in bytes, as a big-endian uint64;
//  5. the 32-byte SHA-256 of the file's content.
//
// Nothing separates or ends the records. Folders are not encoded: an empty folder changes
// nothing, and a file's folder is only the prefix of its path. Nor are modification times,
// owners, groups, other permission bits, extended attributes, the order of tar entries, tar
// directory entries, gzip header fields or the manifest's name and content. Hidden files (a
// .git folder, .DS_Store) are content like any other file: there is no ignore list, which
// would be a second rule set to keep identical across implementations. Hashing per-file digests
// keeps memory flat whatever the file sizes.
//
// Test vector: the package of four files
//
//	manifest.json  {"app_id":"org.example.hello"}  (excluded)
//	README.md      "hello\n"                       mode 0o644
//	bin/hello      "#!/bin/sh\necho hello\n"       mode 0o755
//	empty          ""                              mode 0o644
//
// encodes to the 186-byte stream in testdata/vector-v1.hex and has the digest
//
//	sha256:c716d48acb1432ed623c42804af87ef24ee40bc59d06995ffd71b9e08dbc1a22
//
// # Paths
//
// Every path in a package is relative and slash-separated, at most MaxPathBytes bytes with
// segments of at most MaxNameBytes bytes, valid UTF-8 in Unicode normalization form C, of
// printable characters only (unicode.IsPrint: no control characters, no spaces but U+0020),
// with no backslash, no NUL, no empty segment ("a//b", a trailing slash), no "." or ".."
// segment (so a tar entry "./a" is refused: build archives from the names, not from "."),
// and no leading slash. No two entries may have the same path, or paths equal after Unicode
// case folding ("A" and "a", or "A/x" and "a/y"), and no path may be both a file and a folder
// ("a" a file and "a/b"). A folder on a file system that stores decomposed names (HFS+) yields
// non-NFC names and is refused; archive it elsewhere.
//
// # Entries
//
// Only regular files and folders are accepted. In a folder, every name is examined with Lstat
// and never followed: symbolic links, devices, named pipes, sockets and (on Unix) regular files
// with more than one hard link are refused. In a tar archive, every entry type but regular file
// and directory is refused, as are GNU and PAX sparse files; a PAX global header is accepted only
// if it holds nothing but "comment" records (as git archive writes).
//
// The manifest is the regular file manifest.json at the root. None is refused, as is a root
// entry equal to it up to case ("Manifest.json"), which a case-insensitive file system would
// confuse with it. A root manifest.yaml or manifest.yml (in any case) is refused too, rather
// than taken for content beside the manifest: YAML is the authoring form, signed into
// manifest.json (capgate manifest sign -o manifest.json manifest.yaml) before it is packaged.
// A manifest.json or manifest.yaml deeper in the tree is ordinary content.
//
// # Archives
//
// A .tar.gz must be exactly one gzip member (a second member, or any byte after the first, is
// refused) holding one tar archive that ends with its end-of-archive marker (two zero blocks),
// after which only zero bytes may follow (the padding tar writers add to fill a record).
// Archives missing the marker, or with data after it, are refused rather than guessed at: two
// tools must not see two different packages in one file.
//
// # Limits
//
// limits.go bounds the total size of the files, the decompressed tar stream (the compression
// bomb guard: the stream is read through an io.LimitedReader and refused once it yields more
// than MaxArchiveBytes), the compressed file, the number of entries, the path and segment
// lengths and the manifest size, each with its reason.
//
// # Errors
//
// A refused package yields an *Error naming the offending entry's path inside the package and
// the rule it broke, never file content, and wrapping one of ErrFormat, ErrEntryType, ErrPath,
// ErrCollision, ErrManifest or ErrLimit.
package archive
