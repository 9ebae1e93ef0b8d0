// Package profile keeps the person's low-sensitivity profile (a display name, a preferred
// language, a time zone), which capgate may give a tool server that asks for it in a form,
// and the person's grants saying which tool servers may have it.
//
// The profile is the only thing capgate ever fills into a tool server's form by itself, and
// only for a server the person granted it to (Granted): every other field is asked of the
// person, and a form that asks for a password, a token, a secret, an API key or payment
// details is never filled at all (the tool server package declines it before this package is
// asked). Which field of a form is which profile field is read from the field's name alone
// (FieldOf), folded as the secret lint folds names, and only for a field that takes a string.
package profile
