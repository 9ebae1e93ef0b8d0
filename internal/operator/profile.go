package operator

import (
	"context"
	"fmt"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/toolserver"
)

// The audit actions of the person's profile.
const (
	ActionProfileSet   = "profile.set"
	ActionProfileGrant = "profile.grant"
	ActionProfileTake  = "profile.take_back"
)

// SetProfile saves the person's low-sensitivity profile, by by. It is what capgate may give
// the tool servers the person granted it to, so it is not saved unrecorded. The record names
// which fields are set, never their values.
func (s *Service) SetProfile(ctx context.Context, by Actor, p profile.Profile) error {
	if s.Programs == nil {
		return ErrUnavailable
	}
	p, err := profile.Normalize(p)
	if err != nil {
		return err
	}
	var set []string
	for _, f := range []profile.Field{profile.FieldDisplayName, profile.FieldLanguage, profile.FieldTimeZone} {
		if p.Value(f) != "" {
			set = append(set, string(f))
		}
	}
	rec := audit.Record{Action: ActionProfileSet, Result: "profile change requested",
		Explanation: fmt.Sprintf("%s saved the profile %s, with the fields %v set", by.Who, by.Where, set)}
	return Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error { return profile.Save(ctx, s.Programs, p) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// SetProfileGrant lets the tool server named server have the person's profile in its forms
// (on), or takes that back, by by. Giving is not made unrecorded; taking back is.
func (s *Service) SetProfileGrant(ctx context.Context, by Actor, server string, on bool) error {
	if s.Programs == nil {
		return ErrUnavailable
	}
	rec := audit.Record{Action: ActionProfileGrant, App: toolserver.AppPrefix + server, Result: "profile grant requested",
		Explanation: fmt.Sprintf("%s let the tool server have the profile in its forms %s", by.Who, by.Where)}
	if !on {
		rec.Action, rec.Result = ActionProfileTake, "profile grant taken back"
		rec.Explanation = fmt.Sprintf("%s took back the tool server's grant of the profile %s", by.Who, by.Where)
	}
	return Change(ctx, s.Audit, by.ID, rec, !on, func(*audit.Record) error { return profile.SetGrant(ctx, s.Programs, server, on) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}
