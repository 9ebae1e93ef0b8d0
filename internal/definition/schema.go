package definition

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/unicode/norm"

	"github.com/capgate/capgate/manifest"
)

// draft2020 is the only $schema a definition's input or output may name.
var draft2020 = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema":  true,
	"https://json-schema.org/draft/2020-12/schema#": true,
}

var errRemoteRef = errors.New("references outside the schema are never fetched")

type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errRemoteRef }

// compileSchema compiles doc as JSON Schema 2020-12 with nothing fetched from outside it, and
// returns the rule it breaks, "" when it compiles.
func compileSchema(doc any) string {
	if obj, ok := doc.(map[string]any); ok {
		if s, present := obj["$schema"]; present {
			if str, ok := s.(string); !ok || !draft2020[str] {
				return "$schema must be JSON Schema 2020-12 (https://json-schema.org/draft/2020-12/schema)"
			}
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.AssertFormat()
	const url = "mem://capgate/definition.json"
	if err := c.AddResource(url, doc); err != nil {
		return "does not compile as a JSON Schema 2020-12"
	}
	if _, err := c.Compile(url); err != nil {
		if errors.Is(err, errRemoteRef) || strings.Contains(err.Error(), errRemoteRef.Error()) {
			return "refers outside itself ($ref to another document), which is never fetched"
		}
		return "does not compile as a JSON Schema 2020-12"
	}
	return ""
}

// secretWords are the words that make a field one that would carry a credential or payment
// card details, matched in the field's name with case, separators and compatibility forms
// folded away ("API-Key", "api_key" and "apiKey" are one word).
var secretWords = []string{
	"password", "passwd", "passphrase", "passcode", "secret", "token", "apikey", "accesskey",
	"privatekey", "credential", "bearer", "authorization",
	"cardnumber", "creditcard", "debitcard", "paymentcard", "cardverification", "securitycode",
	"cvv", "cvc", "ccnumber", "ccnum", "iban",
	// Turkish: şifre and parola (password), kart numarası (card number), güvenlik kodu
	// (security code), with and without the Turkish letters.
	"şifre", "sifre", "parola", "kartnumarası", "kartnumarasi", "kartno", "güvenlikkodu", "guvenlikkodu",
}

// secretNames are whole words that name such a field on their own.
var secretNames = []string{"pin", "pwd", "pan", "card", "otp", "cc"}

// propertyNameRule is the one spelling of a field name in a definition's schemas: ASCII,
// so that no look-alike letter hides a word the lint refuses.
const propertyNameRule = "field names must be ASCII letters, digits, _ and -, starting with a letter, at most 64"

// SecretFields returns a problem, under path, for every field of the JSON Schema doc (as
// jcs.Value.Interface or encoding/json give it) that would carry a password, a token, a
// secret, an API key or payment card details: by its name (in properties, patternProperties,
// required, dependentRequired and dependentSchemas) or by its format, at any depth of
// subschemas ($defs, items, prefixItems, allOf, anyOf, oneOf, not, if/then/else,
// additionalProperties, contains and the rest). A schema nested deeper than MaxSchemaDepth
// is refused rather than walked.
func SecretFields(doc any, path string) manifest.Problems {
	var ps manifest.Problems
	walkSchema(doc, path, 0, &ps)
	return ps
}

// Keywords whose value is one subschema, a list of them, or a map of names to them.
var (
	oneSchema   = []string{"items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "contains", "not", "if", "then", "else", "propertyNames", "additionalItems", "contentSchema"}
	listSchemas = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchemas  = []string{"$defs", "definitions"}
)

func walkSchema(doc any, path string, depth int, ps *manifest.Problems) {
	obj, ok := doc.(map[string]any)
	if !ok {
		if list, isList := doc.([]any); isList { // draft-04 style items: [schemas]
			for i, s := range list {
				walkSchema(s, index(path, i), depth+1, ps)
			}
		}
		return
	}
	if depth > MaxSchemaDepth {
		*ps = append(*ps, manifest.Problem{Path: path, Rule: "nested deeper than the lint walks; refused"})
		return
	}
	add := func(p, rule string) { *ps = append(*ps, manifest.Problem{Path: p, Rule: rule}) }
	checkName := func(p, name string) {
		if isSecretName(name) {
			add(p, "a field that would carry a password, token, secret, API key or card details; definitions may not have one")
		}
		if !isFieldName(name) {
			add(p, propertyNameRule)
		}
	}
	if f, ok := obj["format"].(string); ok && isSecretName(f) {
		add(field(path, "format"), "a format for a password, token, secret, API key or card details; definitions may not have one")
	}
	for _, kw := range []string{"properties", "dependentSchemas"} {
		if props, ok := obj[kw].(map[string]any); ok {
			for _, name := range sortedKeys(props) {
				p := field(field(path, kw), pathName(name))
				checkName(p, name)
				walkSchema(props[name], p, depth+1, ps)
			}
		}
	}
	if props, ok := obj["patternProperties"].(map[string]any); ok {
		for _, pattern := range sortedKeys(props) {
			p := field(field(path, "patternProperties"), pathName(pattern))
			if isSecretName(pattern) {
				add(p, "a pattern matching fields that would carry a password, token, secret, API key or card details")
			}
			walkSchema(props[pattern], p, depth+1, ps)
		}
	}
	if req, ok := obj["required"].([]any); ok {
		for i, n := range req {
			if s, ok := n.(string); ok {
				checkName(index(field(path, "required"), i), s)
			}
		}
	}
	if dr, ok := obj["dependentRequired"].(map[string]any); ok {
		for _, name := range sortedKeys(dr) {
			p := field(field(path, "dependentRequired"), pathName(name))
			checkName(p, name)
			if list, ok := dr[name].([]any); ok {
				for i, n := range list {
					if s, ok := n.(string); ok {
						checkName(index(p, i), s)
					}
				}
			}
		}
	}
	for _, kw := range oneSchema {
		if s, ok := obj[kw]; ok {
			walkSchema(s, field(path, kw), depth+1, ps)
		}
	}
	for _, kw := range listSchemas {
		if list, ok := obj[kw].([]any); ok {
			for i, s := range list {
				walkSchema(s, index(field(path, kw), i), depth+1, ps)
			}
		}
	}
	for _, kw := range mapSchemas {
		if defs, ok := obj[kw].(map[string]any); ok {
			for _, name := range sortedKeys(defs) {
				walkSchema(defs[name], field(field(path, kw), pathName(name)), depth+1, ps)
			}
		}
	}
}

// pathName is a member name as a field path shows it: as it is when it is a plain field name,
// else quoted in ASCII and cut to 64 bytes, so that no name an author chose can put control
// characters or look-alike letters into a terminal through a problem's path.
func pathName(name string) string {
	if isFieldName(name) {
		return name
	}
	q := strconv.QuoteToASCII(name)
	if len(q) > 64 {
		q = q[:60] + `..."`
	}
	return q
}

// AsksForSecrets reports whether the JSON Schema doc has a field that would carry a password,
// a token, a secret, an API key or payment card details, by name or format, at any depth, as
// SecretFields finds them, in any script: a schema a definition could not have for its field
// names alone (not ASCII) does not count here.
func AsksForSecrets(doc any) bool {
	for _, p := range SecretFields(doc, "") {
		if p.Rule != propertyNameRule {
			return true
		}
	}
	return false
}

// isFieldName reports whether name is ASCII [A-Za-z][A-Za-z0-9_-]{0,63}.
func isFieldName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// isSecretName reports whether name, folded (NFKC, lower case, nothing but letters and
// digits), contains a secret word, or whether one of its words (split at separators and at
// lower-to-upper case changes) is a secret name.
func isSecretName(name string) bool {
	folded := norm.NFKC.String(name)
	var flat strings.Builder
	var words []string
	var word strings.Builder
	prevLower := false
	flush := func() {
		if word.Len() > 0 {
			words = append(words, word.String())
			word.Reset()
		}
	}
	for _, r := range folded {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
			lr := unicode.ToLower(r)
			flat.WriteRune(lr)
			word.WriteRune(lr)
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	s := flat.String()
	for _, w := range secretWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	for _, w := range words {
		for _, n := range secretNames {
			if w == n {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
