package yamljson

import "strconv"

// The rule texts of Error. They are fixed so that no error can carry document
// text; tests compare against them.
const (
	// Input and syntax.
	ruleNotUTF8      = "input is not valid UTF-8"
	ruleBareCR       = "carriage return not followed by line feed"
	ruleBadChar      = "character not allowed in YAML text"
	ruleMidDocBOM    = "byte order mark inside the document"
	ruleSyntax       = "invalid YAML syntax"
	ruleParserFail   = "YAML parser failed on this input"
	ruleDropped      = "content the YAML parser leaves out of the document"
	ruleFinalBreak   = "last line that the YAML parser reads differently without a final line break; end the input with one"
	ruleQuotePos     = "cannot locate quoted scalar in the input"
	ruleQuoteDiffers = "quoted scalar that YAML parsers decode differently (an escaped space before a line break?)"

	// Documents.
	ruleEmptyDoc     = "empty document"
	ruleMultiDoc     = "more than one document"
	ruleDirective    = "directives are not supported"
	ruleUnsupported  = "unsupported YAML construct"
	ruleAnchor       = "anchors are not supported"
	ruleAlias        = "aliases are not supported"
	ruleExplicitKey  = "explicit mapping keys (?) are not supported"
	ruleMergeKey     = "merge keys (<<) are not supported"
	ruleDuplicateKey = "duplicate mapping key"
	ruleKeyNotString = "mapping key is not a string"

	// Tags.
	ruleTag         = "unsupported tag"
	ruleTagMismatch = "value does not match its tag"

	// Scalars.
	ruleNonFinite    = "non-finite number"
	ruleLeadingZero  = "number with a leading zero (ambiguous: YAML 1.1 reads such integers as octal, and JSON forbids it)"
	ruleAmbiguousNum = "ambiguous plain scalar that other YAML readers take for a number; quote it or write a plain decimal"
	ruleBadEscape    = "invalid escape sequence in double-quoted scalar"
	ruleSurrogate    = "escape sequence names a surrogate or a code point beyond Unicode"
	ruleStringUTF8   = "string is not valid UTF-8"
)

// Rules that name a limit; the limit is no secret.
var (
	ruleTooLarge = "input larger than " + strconv.Itoa(MaxInputBytes) + " bytes"
	ruleTooDeep  = "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"
	ruleTooMany  = "more than " + strconv.Itoa(MaxNodes) + " nodes"
	ruleManyKeys = "mapping with more than " + strconv.Itoa(MaxMappingKeys) + " keys"
	ruleTooMuch  = "document too costly for the YAML parser (long keys above many nodes, or many large mappings)"
	ruleScanDeep = "nesting far deeper than " + strconv.Itoa(MaxDepth) + " levels"
	ruleScanMany = "far more than " + strconv.Itoa(MaxNodes) + " nodes"
	ruleScanKeys = "mapping with far more than " + strconv.Itoa(MaxMappingKeys) + " keys"
)
