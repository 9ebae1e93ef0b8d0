package definition

// Limits of a definition file, in one place.
const (
	// MaxFileBytes bounds a definition file, JSON or YAML.
	MaxFileBytes = 1 << 20
	// MaxNameBytes bounds a definition's name.
	MaxNameBytes = 255
	// MaxDescriptionBytes bounds each language's description.
	MaxDescriptionBytes = 1024
	// MaxExampleBytes bounds each example's text.
	MaxExampleBytes = 2048
	// MaxExamples bounds the examples of one definition.
	MaxExamples = 256
	// MaxActions bounds the actions of one definition.
	MaxActions = 64
	// MaxProviders bounds the providers a definition lists.
	MaxProviders = 256
	// MaxListItems bounds data classes and surface requirements.
	MaxListItems = 64
	// MaxSchemaDepth bounds how deep the secret-field lint walks a schema; deeper is refused.
	MaxSchemaDepth = 64
)
