package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConsentRowOf(t *testing.T) {
	for _, state := range []string{ConsentPending, ConsentApproved, ConsentDenied, ConsentExpired, ConsentCancelled} {
		if _, err := ConsentRowOf(Consent{State: state}); err != nil {
			t.Errorf("state %q: %v", state, err)
		}
	}
	for _, state := range []string{"", "Pending", "PENDING", "pending ", " pending", "pending\x00", "approve", "answered"} {
		_, err := ConsentRowOf(Consent{State: state})
		if err == nil || !strings.HasPrefix(err.Error(), "consent.State: ") {
			t.Errorf("state %q: %v, want consent.State refused", state, err)
		}
	}
	_, err := ConsentRowOf(Consent{State: ConsentPending, Expires: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err == nil || !strings.HasPrefix(err.Error(), "consent.Expires: ") {
		t.Errorf("Expires in 1500: %v", err)
	}
}

func TestAnswerCol(t *testing.T) {
	now := time.Now()
	for _, state := range []string{ConsentApproved, ConsentDenied, ConsentExpired, ConsentCancelled} {
		if n, err := AnswerCol(state, now); err != nil || n.Int64 != now.UnixNano() {
			t.Errorf("AnswerCol(%q) = %+v, %v", state, n, err)
		}
	}
	for _, state := range []string{ConsentPending, "", "Approved", "approved\n", "yes"} {
		if _, err := AnswerCol(state, now); err == nil || !strings.HasPrefix(err.Error(), "state: ") {
			t.Errorf("AnswerCol(%q) = %v, want state refused", state, err)
		}
	}
	if _, err := AnswerCol(ConsentApproved, time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil || !strings.HasPrefix(err.Error(), "at: ") {
		t.Errorf("AnswerCol at 2263: %v", err)
	}
}

func TestAnswerable(t *testing.T) {
	now := time.Now()
	exp := NullInt{Int64: now.UnixNano(), Valid: true}
	for _, tc := range []struct {
		name    string
		state   string
		expires NullInt
		at      time.Time
		want    string // "" answerable, else the conflict's reason
	}{
		{"pending, no expiry", ConsentPending, NullInt{}, now, ""},
		{"pending, before its expiry", ConsentPending, exp, now.Add(-1), ""},
		{"pending, at the zero time", ConsentPending, exp, time.Time{}, ""},
		{"pending, at its expiry", ConsentPending, exp, now, "expired"},
		{"pending, after its expiry", ConsentPending, exp, now.Add(time.Hour), "expired"},
		{"approved", ConsentApproved, NullInt{}, now, "no longer pending"},
		{"denied and expired", ConsentDenied, exp, now.Add(time.Hour), "no longer pending"},
		{"expired", ConsentExpired, exp, now.Add(-1), "no longer pending"},
		{"cancelled", ConsentCancelled, NullInt{}, now, "no longer pending"},
	} {
		err := Answerable(tc.state, tc.expires, tc.at)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want answerable", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrConflict) || !strings.HasPrefix(err.Error(), tc.want+": ")):
			t.Errorf("%s: %v, want ErrConflict, %s", tc.name, err, tc.want)
		}
		// What a failed compare-and-set reports for the row it saw.
		conflict := AnswerConflict(tc.state, tc.expires, tc.at)
		want := tc.want
		if want == "" {
			want = "no longer pending" // answerable as seen: another answer took it
		}
		if !errors.Is(conflict, ErrConflict) || !strings.HasPrefix(conflict.Error(), want+": ") {
			t.Errorf("%s: AnswerConflict = %v, want %s", tc.name, conflict, want)
		}
	}
}
