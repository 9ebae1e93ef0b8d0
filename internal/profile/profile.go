package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/capgate/capgate/internal/store"
)

// stateApp is the store state the profile and the grants are kept in: the host's own, so
// that no app can write them.
const stateApp = "capgate.profile"

const (
	profileKey  = "profile"
	grantPrefix = "grant/"
)

// Profile is the person's low-sensitivity profile. Every field may be empty: an empty field
// is never given.
//
// Evolution: a new field must be low-sensitivity by the definitions document's rule and
// optional; Load refuses unknown fields, so a profile written by a newer capgate reads as an
// error, never as a partial one.
type Profile struct {
	DisplayName string `json:"display_name,omitempty"`
	// Language is a BCP 47 tag ("tr", "en-GB"), kept in its canonical form.
	Language string `json:"language,omitempty"`
	// TimeZone is an IANA time zone name ("Europe/Istanbul").
	TimeZone string `json:"time_zone,omitempty"`
}

// ErrInvalid is wrapped by the error of a profile that breaks a rule.
var ErrInvalid = errors.New("profile: invalid")

// Normalize checks p and returns it with its language tag in canonical form: the display
// name valid UTF-8 (NFC) of at most MaxDisplayNameBytes without control characters, the
// language a well-formed BCP 47 tag, the time zone one this machine knows ("Local" is not a
// name). The error names the field and the rule, never the value.
func Normalize(p Profile) (Profile, error) {
	var errs []error
	bad := func(field, rule string) { errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, field, rule)) }
	p.DisplayName = strings.TrimSpace(norm.NFC.String(p.DisplayName))
	switch {
	case !utf8.ValidString(p.DisplayName):
		bad("display_name", "not valid UTF-8")
	case len(p.DisplayName) > MaxDisplayNameBytes:
		bad("display_name", fmt.Sprintf("longer than %d bytes", MaxDisplayNameBytes))
	case strings.ContainsFunc(p.DisplayName, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }):
		bad("display_name", "holds control or format characters")
	}
	if p.Language = strings.TrimSpace(p.Language); p.Language != "" {
		if tag, err := language.Parse(p.Language); err != nil || len(p.Language) > 35 {
			bad("language", "must be a BCP 47 language tag such as tr or en-GB")
		} else {
			p.Language = tag.String()
		}
	}
	if p.TimeZone = strings.TrimSpace(p.TimeZone); p.TimeZone != "" {
		if _, err := time.LoadLocation(p.TimeZone); err != nil || p.TimeZone == "Local" || len(p.TimeZone) > 64 {
			bad("time_zone", "must be an IANA time zone name such as Europe/Istanbul")
		}
	}
	return p, errors.Join(errs...)
}

// Load returns the person's profile: the zero Profile when none was saved. A stored record
// that does not read back as one Save writes is an error, not a profile.
func Load(ctx context.Context, st store.State) (Profile, error) {
	raw, err := st.GetState(ctx, stateApp, profileKey)
	if errors.Is(err, store.ErrNotFound) {
		return Profile{}, nil
	}
	if err != nil {
		return Profile{}, err
	}
	var p Profile
	if err := strictly(raw, &p); err != nil {
		return Profile{}, fmt.Errorf("profile: the stored profile does not read: %w", err)
	}
	return Normalize(p)
}

// Save checks and keeps p as the person's profile.
func Save(ctx context.Context, st store.State, p Profile) error {
	p, err := Normalize(p)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return st.PutState(ctx, stateApp, profileKey, raw)
}

// Granted reports whether the person lets the tool server named server have the profile. No
// grant, or one that cannot be read, is no.
func Granted(ctx context.Context, st store.State, server string) bool {
	raw, err := st.GetState(ctx, stateApp, grantPrefix+server)
	return err == nil && string(raw) == "true"
}

// SetGrant gives (on) or takes back the grant of the profile to the tool server named server.
func SetGrant(ctx context.Context, st store.State, server string, on bool) error {
	if server == "" {
		return fmt.Errorf("%w: server: empty", ErrInvalid)
	}
	if !on {
		return st.PutState(ctx, stateApp, grantPrefix+server, nil)
	}
	return st.PutState(ctx, stateApp, grantPrefix+server, []byte("true"))
}

// Grants lists the tool servers the profile is granted to.
func Grants(ctx context.Context, st store.State) ([]string, error) {
	m, err := st.ListState(ctx, stateApp, grantPrefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for k, v := range m {
		if string(v) == "true" {
			out = append(out, strings.TrimPrefix(k, grantPrefix))
		}
	}
	return out, nil
}

func strictly(raw []byte, v any) error {
	if len(raw) > MaxRecordBytes {
		return fmt.Errorf("larger than %d bytes", MaxRecordBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one value")
	}
	return nil
}
