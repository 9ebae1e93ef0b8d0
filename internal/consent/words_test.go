package consent_test

import (
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
)

// Durations read the way a person says them: two units at most, the smaller left out when
// zero, rounded to the smaller unit shown, never "1439 min 56 s".
func TestShowDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{400 * time.Millisecond, "0 s"},
		{45 * time.Second, "45 s"},
		{59*time.Second + 600*time.Millisecond, "1 min"},
		{4*time.Minute + 10*time.Second, "4 min 10 s"},
		{5 * time.Minute, "5 min"},
		{59*time.Minute + 59*time.Second, "59 min 59 s"},
		{59*time.Minute + 59*time.Second + 600*time.Millisecond, "1 h"},
		{time.Hour, "1 h"},
		{23*time.Hour + 59*time.Minute, "23 h 59 min"},
		{23*time.Hour + 59*time.Minute + 29*time.Second, "23 h 59 min"},
		{24*time.Hour - 4*time.Second, "1 day"}, // a pin request's time left at first sight
		{24 * time.Hour, "1 day"},
		{25*time.Hour + 10*time.Minute, "1 day 1 h"},
		{48 * time.Hour, "2 days"},
		{700 * time.Hour, "29 days 4 h"},
		{700*time.Hour - time.Second, "29 days 4 h"},
		{30 * 24 * time.Hour, "30 days"},
		{-90 * time.Second, "1 min 30 s"},
	} {
		if got := consent.ShowDuration(tc.d); got != tc.want {
			t.Errorf("ShowDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestShowWhen(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	at := now.Add(700 * time.Hour)
	if got := consent.ShowWhen(at, now); got != "in 29 days 4 h (Dec 29, 2026 18:00 UTC)" {
		t.Errorf("ShowWhen future = %q", got)
	}
	if got := consent.ShowWhen(now.Add(-5*time.Minute), now.In(time.FixedZone("x", 3600))); got != "5 min ago (Nov 30, 2026 13:55 UTC)" {
		t.Errorf("ShowWhen past = %q", got)
	}
}
