package keys

// Every size and count limit of the package, each with its reason.
const (
	// maxPublicKeyFileSize bounds how much of a public key file is read. The
	// longest valid file is 44 base64 characters plus a little trailing
	// whitespace; 4 KiB leaves room for editors and still refuses a huge or
	// endless file (a device, a log pointed at by mistake) before reading it.
	maxPublicKeyFileSize = 4 << 10

	// maxRotationKeys bounds the *.pub files read from one {app_id}.d folder.
	// A rotation overlap needs two or three keys; a folder with more than this
	// is a mistake, and refusing it keeps one verification from reading an
	// unbounded number of files.
	maxRotationKeys = 32
)
