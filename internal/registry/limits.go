package registry

// Every size and count limit of the package is here, each with its reason.

const (
	// MaxAliasBytes bounds an alias, the short name agents write in the IPC "app" field. It
	// is typed by people and models and shown in prompts and logs; 32 bytes hold every real
	// app's short name ("terminal", "mousepad", "calendar-sync") and keep it a word.
	MaxAliasBytes = 32
)
