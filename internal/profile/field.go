package profile

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Field is a profile field a form's field can be filled from.
type Field string

// The profile's fields.
const (
	FieldDisplayName Field = "display_name"
	FieldLanguage    Field = "language"
	FieldTimeZone    Field = "time_zone"
)

// names are the folded form-field names (letters and digits only, lower case) each profile
// field fills, in English and Turkish. A name means one of them whole, never by containing
// it: "company_name" is no display name, and "username" is an account, not a name to show.
var names = map[string]Field{
	"name": FieldDisplayName, "displayname": FieldDisplayName, "fullname": FieldDisplayName, "yourname": FieldDisplayName,
	"preferredname": FieldDisplayName, "adsoyad": FieldDisplayName, "adınız": FieldDisplayName, "isim": FieldDisplayName,
	"language": FieldLanguage, "lang": FieldLanguage, "locale": FieldLanguage, "preferredlanguage": FieldLanguage, "dil": FieldLanguage,
	"timezone": FieldTimeZone, "tz": FieldTimeZone, "saatdilimi": FieldTimeZone,
}

// FieldOf says which profile field a form's field named name, of the JSON Schema type typ
// ("" when it declares none), is: only a string field can be one.
func FieldOf(name, typ string) (Field, bool) {
	if typ != "" && typ != "string" {
		return "", false
	}
	f, ok := names[fold(name)]
	return f, ok
}

// Value is p's value of f, "" when it has none.
func (p Profile) Value(f Field) string {
	switch f {
	case FieldDisplayName:
		return p.DisplayName
	case FieldLanguage:
		return p.Language
	case FieldTimeZone:
		return p.TimeZone
	}
	return ""
}

// fold is name in NFKC, lower case (Turkish dotted and dotless i kept apart by Unicode's
// own lowering), with nothing but letters and digits.
func fold(name string) string {
	var b strings.Builder
	for _, r := range norm.NFKC.String(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
