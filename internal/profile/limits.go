package profile

const (
	// MaxDisplayNameBytes bounds the display name: a name, not a document.
	MaxDisplayNameBytes = 128
	// MaxRecordBytes bounds a stored profile or grant record, so that a damaged row is
	// refused rather than read.
	MaxRecordBytes = 4 << 10
)
