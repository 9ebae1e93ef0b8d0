package keys

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/capgate/capgate/internal/atomicfile"
)

// Sentinel errors for the conditions callers test with errors.Is. Each is
// returned wrapped, usually in a *FileError that names the file.
var (
	// ErrMalformedKey: a key file or key bytes are not one of the accepted
	// encodings (wrong length, bad base64, not a regular file, too large).
	ErrMalformedKey = errors.New("malformed key")

	// ErrInsecurePermissions: a private key file may be read or written by
	// group or others, or a trusted key file may be written by others.
	ErrInsecurePermissions = errors.New("insecure permissions")

	// ErrNotRegularFile: a private key path is a symlink, folder, device or
	// other non-regular file.
	ErrNotRegularFile = errors.New("not a regular file")

	// ErrExists: a write would replace an existing file and overwrite was not
	// asked for.
	ErrExists = errors.New("file exists")

	// ErrNoTrustedKey: the trust store holds no key at all for an app.
	ErrNoTrustedKey = errors.New("no trusted key")

	// ErrInvalidAppID: an app id is not a valid reverse-DNS name, so it is
	// never used to build a path.
	ErrInvalidAppID = errors.New("invalid app id")

	// ErrTooManyKeys: an {app_id}.d folder holds more key files than the
	// trust store reads.
	ErrTooManyKeys = errors.New("too many trusted keys")
)

// FileError reports a key file that breaks a rule. Path and Rule are safe to
// show to people and to log: Rule describes the rule (and, for modes, the mode
// found), never the file's bytes.
type FileError struct {
	Path string // the file or folder concerned
	Rule string // the rule that was broken, in words
	Err  error  // the sentinel (ErrMalformedKey, ...) or the underlying I/O error
}

// Error returns "keys: {path}: {rule}".
func (e *FileError) Error() string {
	rule := e.Rule
	if rule == "" && e.Err != nil {
		rule = e.Err.Error()
	}
	return "keys: " + e.Path + ": " + rule
}

// Unwrap returns the sentinel or I/O error, for errors.Is and errors.As.
func (e *FileError) Unwrap() error { return e.Err }

// writeKeyFile writes a key file atomically, reporting an existing file as ErrExists.
func writeKeyFile(path string, data []byte, fileMode, dirMode fs.FileMode, overwrite bool) error {
	err := atomicfile.Write(path, data, fileMode, dirMode, overwrite)
	if errors.Is(err, atomicfile.ErrExists) {
		return &FileError{Path: path, Rule: "file exists; refusing to replace it without overwrite", Err: ErrExists}
	}
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}
