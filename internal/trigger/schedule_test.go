package trigger

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// schedUTC reads an RFC 3339 instant in UTC, failing the test on a typo.
func schedUTC(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

// schedRun is n instants from start (RFC 3339), step apart: a stretch of expected firings.
func schedRun(t testing.TB, start string, step time.Duration, n int) []time.Time {
	t.Helper()
	at := schedUTC(t, start)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = at.Add(time.Duration(i) * step)
	}
	return out
}

func mustSchedule(t testing.TB, expr, zone string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(expr, zone)
	if err != nil {
		t.Fatalf("ParseSchedule(%q, %q): %v", expr, zone, err)
	}
	return s
}

// checkFirings asserts got is exactly want (as instants), strictly increasing, and the
// same as iterating Next from after.
func checkFirings(t *testing.T, s *Schedule, after time.Time, got, want []time.Time) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if !got[i].After(got[i-1]) {
			t.Errorf("firing %d (%s) is not after firing %d (%s)", i, got[i].UTC(), i-1, got[i-1].UTC())
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d firings, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !got[i].Equal(want[i]) {
			t.Errorf("firing %d: got %s (%s), want %s", i, got[i].UTC().Format(time.RFC3339),
				got[i].Format("15:04 MST"), want[i].Format(time.RFC3339))
		}
	}
	at := after
	for i, g := range got {
		next := s.Next(at)
		if !next.Equal(g) {
			t.Fatalf("Next after firing %d: %s, Between says %s", i-1, next.UTC(), g.UTC())
		}
		at = next
	}
}

// The days of the tests, each a window from just before its local midnight to just before
// the next: (after, upto]. The transitions, from the tz database:
//
//	America/New_York    2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z; 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z
//	Europe/Berlin       2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z; 2026-10-25 03:00 CEST -> 02:00 CET at 01:00Z
//	Australia/Sydney    2026-04-05 03:00 AEDT -> 02:00 AEST at 04-04 16:00Z; 2026-10-04 02:00 AEST -> 03:00 AEDT at 10-03 16:00Z
//	Australia/Lord_Howe 2026-04-05 02:00 +11 -> 01:30 +1030 at 04-04 15:00Z; 2026-10-04 02:00 +1030 -> 02:30 +11 at 10-03 15:30Z
var schedDays = map[string][2]string{
	"ny-gap":       {"2026-03-08T04:59:59Z", "2026-03-09T03:59:59Z"},
	"ny-overlap":   {"2026-11-01T03:59:59Z", "2026-11-02T04:59:59Z"},
	"ber-gap":      {"2026-03-28T22:59:59Z", "2026-03-29T21:59:59Z"},
	"ber-overlap":  {"2026-10-24T21:59:59Z", "2026-10-25T22:59:59Z"},
	"syd-overlap":  {"2026-04-04T12:59:59Z", "2026-04-05T13:59:59Z"},
	"syd-gap":      {"2026-10-03T13:59:59Z", "2026-10-04T12:59:59Z"},
	"lhi-overlap":  {"2026-04-04T12:59:59Z", "2026-04-05T13:29:59Z"},
	"lhi-gap":      {"2026-10-03T13:29:59Z", "2026-10-04T12:59:59Z"},
	"utc-ordinary": {"2026-03-07T23:59:59Z", "2026-03-08T23:59:59Z"},
}

func TestScheduleDaylightSaving(t *testing.T) {
	const (
		ny  = "America/New_York"
		ber = "Europe/Berlin"
		syd = "Australia/Sydney"
		lhi = "Australia/Lord_Howe"
		h   = time.Hour
		q   = 15 * time.Minute
	)
	cat := slices.Concat[[]time.Time]
	tests := []struct {
		name, expr, zone, day string
		want                  func(t testing.TB) []time.Time
	}{
		// America/New_York, spring forward: 02:00-02:59 do not exist.
		{"ny gap daily 02:30 fires at the change", "30 2 * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-03-08T07:00:00Z", 0, 1) // 03:00 EDT
		}},
		{"ny gap daily 03:00 fires once at the same instant", "0 3 * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-03-08T07:00:00Z", 0, 1)
		}},
		{"ny gap daily 02:30 and 03:00 fire once together", "0,30 2,3 * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return cat(schedRun(t, "2026-03-08T07:00:00Z", 0, 1), schedRun(t, "2026-03-08T07:30:00Z", 0, 1))
		}},
		{"ny gap hourly at :30", "30 * * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-03-08T05:30:00Z", h, 2),  // 00:30, 01:30 EST
				schedRun(t, "2026-03-08T07:00:00Z", 0, 1),  // 02:30 does not exist: 03:00 EDT
				schedRun(t, "2026-03-08T07:30:00Z", h, 21), // 03:30 to 23:30 EDT
			)
		}},
		{"ny gap hourly at :00: 02:00 and 03:00 are one firing", "0 * * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-03-08T05:00:00Z", h, 2),  // 00:00, 01:00 EST
				schedRun(t, "2026-03-08T07:00:00Z", h, 21), // 02:00 (gap) with 03:00 EDT, to 23:00 EDT
			)
		}},
		{"ny gap every 15 minutes", "*/15 * * * *", ny, "ny-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-03-08T05:00:00Z", q, 8),  // 00:00 to 01:45 EST
				schedRun(t, "2026-03-08T07:00:00Z", q, 84), // 02:00-02:45 (gap) with 03:00 EDT, to 23:45 EDT
			)
		}},
		// America/New_York, fall back: 01:00-01:59 occur twice.
		{"ny overlap daily 01:30 fires at the first", "30 1 * * *", ny, "ny-overlap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-11-01T05:30:00Z", 0, 1) // 01:30 EDT
		}},
		{"ny overlap hourly at :30", "30 * * * *", ny, "ny-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-11-01T04:30:00Z", h, 2),  // 00:30, 01:30 EDT
				schedRun(t, "2026-11-01T07:30:00Z", h, 22), // 02:30 to 23:30 EST; not 01:30 EST
			)
		}},
		{"ny overlap every 15 minutes", "*/15 * * * *", ny, "ny-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-11-01T04:00:00Z", q, 8),  // 00:00 to 01:45 EDT
				schedRun(t, "2026-11-01T07:00:00Z", q, 88), // 02:00 to 23:45 EST
			)
		}},
		// Europe/Berlin, spring forward: 02:00-02:59 do not exist.
		{"berlin gap daily 02:30 fires at the change", "30 2 * * *", ber, "ber-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-03-29T01:00:00Z", 0, 1) // 03:00 CEST
		}},
		{"berlin gap hourly at :30", "30 * * * *", ber, "ber-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-03-28T23:30:00Z", h, 2),  // 00:30, 01:30 CET
				schedRun(t, "2026-03-29T01:00:00Z", 0, 1),  // 02:30: 03:00 CEST
				schedRun(t, "2026-03-29T01:30:00Z", h, 21), // 03:30 to 23:30 CEST
			)
		}},
		{"berlin gap every 15 minutes", "*/15 * * * *", ber, "ber-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-03-28T23:00:00Z", q, 8),
				schedRun(t, "2026-03-29T01:00:00Z", q, 84),
			)
		}},
		// Europe/Berlin, fall back: 02:00-02:59 occur twice.
		{"berlin overlap daily 02:30 fires at the first", "30 2 * * *", ber, "ber-overlap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-10-25T00:30:00Z", 0, 1) // 02:30 CEST
		}},
		{"berlin overlap hourly at :30", "30 * * * *", ber, "ber-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-24T22:30:00Z", h, 3),  // 00:30, 01:30, 02:30 CEST
				schedRun(t, "2026-10-25T02:30:00Z", h, 21), // 03:30 to 23:30 CET; not 02:30 CET
			)
		}},
		{"berlin overlap every 15 minutes", "*/15 * * * *", ber, "ber-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-24T22:00:00Z", q, 12), // 00:00 to 02:45 CEST
				schedRun(t, "2026-10-25T02:00:00Z", q, 84), // 03:00 to 23:45 CET
			)
		}},
		// Australia/Sydney: the southern hemisphere, fall back in April, spring forward in October.
		{"sydney overlap daily 02:30 fires at the first", "30 2 * * *", syd, "syd-overlap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-04-04T15:30:00Z", 0, 1) // 02:30 AEDT
		}},
		{"sydney overlap hourly at :30", "30 * * * *", syd, "syd-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-04-04T13:30:00Z", h, 3),  // 00:30 to 02:30 AEDT
				schedRun(t, "2026-04-04T17:30:00Z", h, 21), // 03:30 to 23:30 AEST
			)
		}},
		{"sydney overlap every 15 minutes", "*/15 * * * *", syd, "syd-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-04-04T13:00:00Z", q, 12),
				schedRun(t, "2026-04-04T17:00:00Z", q, 84),
			)
		}},
		{"sydney gap daily 02:30 fires at the change", "30 2 * * *", syd, "syd-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-10-03T16:00:00Z", 0, 1) // 03:00 AEDT
		}},
		{"sydney gap hourly at :30", "30 * * * *", syd, "syd-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-03T14:30:00Z", h, 2),
				schedRun(t, "2026-10-03T16:00:00Z", 0, 1),
				schedRun(t, "2026-10-03T16:30:00Z", h, 21),
			)
		}},
		{"sydney gap every 15 minutes", "*/15 * * * *", syd, "syd-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-03T14:00:00Z", q, 8),
				schedRun(t, "2026-10-03T16:00:00Z", q, 84),
			)
		}},
		// Australia/Lord_Howe shifts by 30 minutes: 02:00-02:29 do not exist in October,
		// 01:30-01:59 occur twice in April.
		{"lord howe gap daily 02:15 fires at the change", "15 2 * * *", lhi, "lhi-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-10-03T15:30:00Z", 0, 1) // 02:30 +11
		}},
		{"lord howe gap daily 02:30 is the change itself", "30 2 * * *", lhi, "lhi-gap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-10-03T15:30:00Z", 0, 1)
		}},
		{"lord howe gap hourly at :00", "0 * * * *", lhi, "lhi-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-03T13:30:00Z", h, 2),  // 00:00, 01:00 +1030
				schedRun(t, "2026-10-03T15:30:00Z", 0, 1),  // 02:00: 02:30 +11
				schedRun(t, "2026-10-03T16:00:00Z", h, 21), // 03:00 to 23:00 +11
			)
		}},
		{"lord howe gap hourly at :30", "30 * * * *", lhi, "lhi-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-03T14:00:00Z", h, 2),  // 00:30, 01:30 +1030
				schedRun(t, "2026-10-03T15:30:00Z", h, 22), // 02:30 to 23:30 +11
			)
		}},
		{"lord howe gap every 15 minutes", "*/15 * * * *", lhi, "lhi-gap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-10-03T13:30:00Z", q, 8),  // 00:00 to 01:45 +1030
				schedRun(t, "2026-10-03T15:30:00Z", q, 86), // 02:00, 02:15 (gap) with 02:30 +11, to 23:45
			)
		}},
		{"lord howe overlap daily 01:45 fires at the first", "45 1 * * *", lhi, "lhi-overlap", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-04-04T14:45:00Z", 0, 1) // 01:45 +11
		}},
		{"lord howe overlap hourly at :30", "30 * * * *", lhi, "lhi-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-04-04T13:30:00Z", h, 2),  // 00:30, 01:30 +11
				schedRun(t, "2026-04-04T16:00:00Z", h, 22), // 02:30 to 23:30 +1030; not 01:30 +1030
			)
		}},
		{"lord howe overlap every 15 minutes", "*/15 * * * *", lhi, "lhi-overlap", func(t testing.TB) []time.Time {
			return cat(
				schedRun(t, "2026-04-04T13:00:00Z", q, 8),  // 00:00 to 01:45 +11
				schedRun(t, "2026-04-04T15:30:00Z", q, 88), // 02:00 to 23:45 +1030
			)
		}},
		// A day without a change, for contrast.
		{"utc hourly", "30 * * * *", "UTC", "utc-ordinary", func(t testing.TB) []time.Time {
			return schedRun(t, "2026-03-08T00:30:00Z", h, 24)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, tc.zone)
			day, ok := schedDays[tc.day]
			if !ok {
				t.Fatalf("no day %q", tc.day)
			}
			after, upto := schedUTC(t, day[0]), schedUTC(t, day[1])
			got, more := s.Between(after, upto, 1000)
			if more {
				t.Error("Between says more were left out")
			}
			checkFirings(t, s, after, got, tc.want(t))
			for _, f := range got {
				if f.Location().String() != tc.zone {
					t.Errorf("firing %s is in %s, want the schedule's zone", f, f.Location())
				}
			}
		})
	}
}

// TestScheduleNextAcrossChanges starts Next inside a gap and inside an overlap.
func TestScheduleNextAcrossChanges(t *testing.T) {
	tests := []struct {
		name, expr, zone, from, want string
	}{
		{"from before a gap", "*/15 * * * *", "America/New_York", "2026-03-08T06:59:00Z", "2026-03-08T07:00:00Z"},
		{"from the gap's firing", "*/15 * * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"},
		{"from the first 01:30 of an overlap", "30 * * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z"},
		{"from the second 01:10 of an overlap", "30 * * * *", "America/New_York", "2026-11-01T06:10:00Z", "2026-11-01T07:30:00Z"},
		{"from the second 01:10, every minute", "* * * * *", "America/New_York", "2026-11-01T06:10:00Z", "2026-11-01T07:00:00Z"},
		{"from the first 01:10, every minute", "* * * * *", "America/New_York", "2026-11-01T05:10:00Z", "2026-11-01T05:11:00Z"},
		{"daily 01:30 skips the second 01:30", "30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		{"strictly after, to the nanosecond", "30 2 * * *", "UTC", "2026-01-01T02:30:00.000000001Z", "2026-01-02T02:30:00Z"},
		{"at the firing itself", "30 2 * * *", "UTC", "2026-01-01T02:30:00Z", "2026-01-02T02:30:00Z"},
		{"just before the firing", "30 2 * * *", "UTC", "2026-01-01T02:29:59.999999999Z", "2026-01-01T02:30:00Z"},
		// Pacific/Apia skipped 2011-12-30 whole: its wall times fire at the change, 2011-12-31 00:00.
		{"a zone that skipped a day", "0 12 * * *", "Pacific/Apia", "2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z"},
		{"the day after the skipped day", "0 12 * * *", "Pacific/Apia", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, tc.zone)
			from, err := time.Parse(time.RFC3339Nano, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(from); !got.Equal(schedUTC(t, tc.want)) {
				t.Errorf("Next(%s) = %s (%s), want %s", tc.from, got.UTC().Format(time.RFC3339), got.Format("15:04 MST"), tc.want)
			}
		})
	}
}

// TestScheduleMatchesMinuteByMinute compares Between over long stretches with a plain
// reading of the rule, checked at every minute: an instant fires when the zone's clock
// reaches or passes, at that instant, a matching wall time that no earlier instant showed.
func TestScheduleMatchesMinuteByMinute(t *testing.T) {
	tests := []struct{ expr, zone, from, to string }{
		{"*/15 * * * *", "America/New_York", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"30 2 * * *", "Europe/Berlin", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"0,30 1-3 * * *", "Australia/Sydney", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"*/10 1,2 * * 0", "Australia/Lord_Howe", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"45 23 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z"},
		{"0 */6 * * *", "Pacific/Apia", "2011-12-01T00:00:00Z", "2012-01-15T00:00:00Z"},
		{"7 0 1,15 * 3", "America/Santiago", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.zone+" "+tc.expr, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, tc.zone)
			from, to := schedUTC(t, tc.from), schedUTC(t, tc.to)
			var want []time.Time
			// maxWall is the latest wall clock any instant before u has shown, written as
			// Unix seconds as if it were UTC.
			prev := from.Add(-time.Minute).In(s.loc)
			maxWall := schedWall(prev)
			for u := from; u.Before(to); u = u.Add(time.Minute) {
				w := schedWall(u.In(s.loc))
				fires := false
				for x := maxWall + 60; x <= w; x += 60 {
					c := time.Unix(x, 0).UTC()
					if s.minute&(1<<uint(c.Minute())) != 0 && s.hour&(1<<uint(c.Hour())) != 0 &&
						s.month&(1<<uint(c.Month())) != 0 && s.dayMatches(c.Day(), c.Weekday()) {
						fires = true
					}
				}
				if fires {
					want = append(want, u)
				}
				maxWall = max(maxWall, w)
			}
			after := from.Add(-time.Nanosecond)
			got, more := s.Between(after, to.Add(-time.Nanosecond), 1<<20)
			if more {
				t.Fatal("Between left firings out")
			}
			checkFirings(t, s, after, got, want)
		})
	}
}

// schedWall is t's wall clock as Unix seconds as if it were UTC.
func schedWall(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.UTC).Unix()
}

// TestScheduleDayOfMonthOrWeek checks Vixie cron's day rule over April 2026, which begins
// on a Wednesday: its Fridays are the 3rd, 10th, 17th and 24th, and the 13th is a Monday.
func TestScheduleDayOfMonthOrWeek(t *testing.T) {
	tests := []struct {
		name, expr string
		days       []int
	}{
		{"both restricted: either matches", "0 0 13 * 5", []int{3, 10, 13, 17, 24}},
		{"both restricted by names", "0 0 13 * fri", []int{3, 10, 13, 17, 24}},
		{"day of month alone", "0 0 13 * *", []int{13}},
		{"day of week alone", "0 0 * * 5", []int{3, 10, 17, 24}},
		{"? is like *", "0 0 ? * 5", []int{3, 10, 17, 24}},
		{"a stepped * still counts as *: both must match", "0 0 */2 * 5", []int{3, 17}},
		{"a stepped * in day of week: both must match", "0 0 13 * */1", []int{13}},
		{"a full range is a restriction: either matches", "0 0 1-31 * 5", schedDaysOf(1, 30)},
		{"weekday range with a day", "0 0 1 * mon-tue", []int{1, 6, 7, 13, 14, 20, 21, 27, 28}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, "UTC")
			got, _ := s.Between(schedUTC(t, "2026-03-31T23:59:59Z"), schedUTC(t, "2026-04-30T23:59:59Z"), 100)
			var want []time.Time
			for _, d := range tc.days {
				want = append(want, time.Date(2026, time.April, d, 0, 0, 0, 0, time.UTC))
			}
			checkFirings(t, s, schedUTC(t, "2026-03-31T23:59:59Z"), got, want)
		})
	}
}

func schedDaysOf(from, to int) []int {
	var out []int
	for d := from; d <= to; d++ {
		out = append(out, d)
	}
	return out
}

func TestScheduleDescriptors(t *testing.T) {
	const from = "2026-04-15T10:17:00Z" // a Wednesday
	tests := []struct{ expr, zone, want string }{
		{"@hourly", "UTC", "2026-04-15T11:00:00Z"},
		{"@daily", "UTC", "2026-04-16T00:00:00Z"},
		{"@midnight", "UTC", "2026-04-16T00:00:00Z"},
		{"@weekly", "UTC", "2026-04-19T00:00:00Z"},
		{"@monthly", "UTC", "2026-05-01T00:00:00Z"},
		{"@yearly", "UTC", "2027-01-01T00:00:00Z"},
		{"@annually", "UTC", "2027-01-01T00:00:00Z"},
		{"@daily", "Europe/Istanbul", "2026-04-15T21:00:00Z"},
		{"  @daily  ", "UTC", "2026-04-16T00:00:00Z"},
		{"0 0 29 2 *", "UTC", "2028-02-29T00:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.expr+" "+tc.zone, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, tc.zone)
			if got := s.Next(schedUTC(t, from)); !got.Equal(schedUTC(t, tc.want)) {
				t.Errorf("Next = %s, want %s", got.UTC().Format(time.RFC3339), tc.want)
			}
			if s.Expr() != tc.expr || s.Zone() != tc.zone {
				t.Errorf("Expr, Zone = %q, %q; want them as given", s.Expr(), s.Zone())
			}
		})
	}
}

// TestScheduleLongestWait is the reason MaxScheduleSearch is eight years: a leap day waits
// across 2100, which is not a leap year.
func TestScheduleLongestWait(t *testing.T) {
	s := mustSchedule(t, "0 0 29 2 *", "UTC")
	if got, want := s.Next(schedUTC(t, "2096-03-01T00:00:00Z")), schedUTC(t, "2104-02-29T00:00:00Z"); !got.Equal(want) {
		t.Errorf("Next = %s, want %s", got, want)
	}
}

func TestScheduleRefusals(t *testing.T) {
	fiveFields := "schedule.cron: must have five fields (minute hour day-of-month month day-of-week)"
	tests := []struct {
		name, expr, zone string
		want             []string // each a line of the error
	}{
		{"empty", "", "UTC", []string{"schedule.cron: is required"}},
		{"blank", " \t ", "UTC", []string{"schedule.cron: is required"}},
		{"four fields", "0 9 * *", "UTC", []string{fiveFields}},
		{"six fields, with seconds", "0 0 9 * * *", "UTC", []string{fiveFields}},
		{"@every", "@every 1m", "UTC", []string{"schedule.cron: must not be @every: a schedule names wall-clock times, not intervals"}},
		{"@reboot", "@reboot", "UTC", []string{"schedule.cron: must be five fields or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"}},
		{"unknown descriptor", "@fortnightly", "UTC", []string{"schedule.cron: must be five fields or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"}},
		{"TZ= prefix", "TZ=Europe/Berlin 0 9 * * *", "UTC", []string{"schedule.cron: must not name a time zone (TZ= or CRON_TZ=): the zone is schedule.time_zone"}},
		{"CRON_TZ= prefix", "CRON_TZ=UTC 0 9 * * *", "UTC", []string{"schedule.cron: must not name a time zone (TZ= or CRON_TZ=): the zone is schedule.time_zone"}},
		{"TZ= alone", "TZ=UTC", "UTC", []string{"schedule.cron: must not name a time zone (TZ= or CRON_TZ=): the zone is schedule.time_zone"}},
		{"TZ= in a field", "0 TZ=UTC * * *", "UTC", []string{"schedule.cron: hour: must be values 0-23, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"minute out of range", "60 * * * *", "UTC", []string{"schedule.cron: minute: must be values 0-59, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"hour out of range", "0 24 * * *", "UTC", []string{"schedule.cron: hour: must be values 0-23, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"day of month 0", "0 0 0 * *", "UTC", []string{"schedule.cron: day-of-month: must be values 1-31, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"day of month 32", "0 0 32 * *", "UTC", []string{"schedule.cron: day-of-month: must be values 1-31, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"month 13", "0 0 * 13 *", "UTC", []string{"schedule.cron: month: must be values 1-12 or jan-dec, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"day of week 7", "0 0 * * 7", "UTC", []string{"schedule.cron: day-of-week: must be values 0-6 or sun-sat, Sunday is 0, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"reversed range", "30-10 * * * *", "UTC", []string{"schedule.cron: minute: must be values 0-59, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"step of zero", "*/0 * * * *", "UTC", []string{"schedule.cron: minute: must be values 0-59, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"commas alone", "0 , * * *", "UTC", []string{"schedule.cron: hour: must be values 0-23, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"negative", "-1 * * * *", "UTC", []string{"schedule.cron: minute: must be values 0-59, as a list of values, ranges (a-b) and steps (/n), or *"}},
		{"too long", "0 0 * * " + strings.Repeat("1,", 126) + "1", "UTC", []string{"schedule.cron: must be at most 256 bytes"}},
		{"February 30th never fires", "0 0 30 2 *", "UTC", []string{"schedule.cron: never fires (no day matches the day-of-month and month fields)"}},
		{"31st of short months never fires", "0 0 31 4,6,9,11 *", "UTC", []string{"schedule.cron: never fires (no day matches the day-of-month and month fields)"}},
		{"no zone", "0 9 * * *", "", []string{"schedule.time_zone: is required (an IANA zone such as Europe/Istanbul, or UTC)"}},
		{"Local", "0 9 * * *", "Local", []string{"schedule.time_zone: must not be Local, which depends on the machine: name an IANA zone such as Europe/Istanbul"}},
		{"unknown zone", "0 9 * * *", "Mars/Olympus_Mons", []string{"schedule.time_zone: must be an IANA zone name such as Europe/Istanbul"}},
		{"a path for a zone", "0 9 * * *", "../../etc/passwd", []string{"schedule.time_zone: must be an IANA zone name such as Europe/Istanbul"}},
		{"the machine's zone by its file", "0 9 * * *", "localtime", []string{"schedule.time_zone: must be an IANA zone name such as Europe/Istanbul"}},
		{"a zoneinfo copy", "0 9 * * *", "posix/Europe/Berlin", []string{"schedule.time_zone: must be an IANA zone name such as Europe/Istanbul"}},
		{"a zoneinfo file that is not a zone", "0 9 * * *", "zone1970.tab", []string{"schedule.time_zone: must be an IANA zone name such as Europe/Istanbul"}},
		{"zone too long", "0 9 * * *", strings.Repeat("A", 65), []string{"schedule.time_zone: must be at most 64 bytes"}},
		{"both wrong", "0 9 * *", "", []string{fiveFields, "schedule.time_zone: is required (an IANA zone such as Europe/Istanbul, or UTC)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.expr, tc.zone)
			if err == nil {
				t.Fatalf("ParseSchedule(%q, %q) = %q, want an error", tc.expr, tc.zone, s.Words())
			}
			if s != nil {
				t.Error("a schedule with the error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	// The rule, never the value: the error does not repeat what was written.
	for _, v := range []struct{ expr, zone, secret string }{
		{"0 0 * * 7", "UTC", "7"},
		{"0 0 * * 1", "Mars/Olympus_Mons", "Olympus"},
		{"0 0 * secretmonth *", "UTC", "secret"},
	} {
		_, err := ParseSchedule(v.expr, v.zone)
		if err == nil || strings.Contains(err.Error(), v.secret) {
			t.Errorf("ParseSchedule(%q, %q): %v; want an error without %q", v.expr, v.zone, err, v.secret)
		}
	}
}

func TestScheduleBetweenMax(t *testing.T) {
	s := mustSchedule(t, "* * * * *", "UTC")
	after := schedUTC(t, "2026-05-01T12:00:00Z")
	upto := after.Add(10 * time.Minute) // ten firings: 12:01 to 12:10, upto included
	tests := []struct {
		max      int
		wantN    int
		wantMore bool
	}{
		{3, 3, true},
		{9, 9, true},
		{10, 10, false},
		{100, 10, false},
		{0, 0, true},
		{-1, 0, true},
	}
	for _, tc := range tests {
		got, more := s.Between(after, upto, tc.max)
		if len(got) != tc.wantN || more != tc.wantMore {
			t.Errorf("Between(max %d) = %d firings, more %v; want %d, %v", tc.max, len(got), more, tc.wantN, tc.wantMore)
		}
		if len(got) > 0 && (!got[0].Equal(after.Add(time.Minute)) || !got[len(got)-1].Equal(after.Add(time.Duration(len(got))*time.Minute))) {
			t.Errorf("Between(max %d) = %v, want the first %d minutes after %s", tc.max, got, tc.wantN, after)
		}
	}
	if got, more := s.Between(upto, after, 10); len(got) != 0 || more {
		t.Errorf("Between with upto before after = %v, %v; want none", got, more)
	}
	if got, more := s.Between(after, after.Add(59*time.Second), 0); len(got) != 0 || more {
		t.Errorf("Between over a window with no firing, max 0 = %v, %v; want none and no more", got, more)
	}
}

func TestScheduleZeroValue(t *testing.T) {
	var s Schedule
	if got := s.Next(time.Now()); !got.IsZero() {
		t.Errorf("zero Schedule's Next = %s, want the zero time", got)
	}
	var nilS *Schedule
	if got, more := nilS.Between(time.Now(), time.Now().Add(time.Hour), 10); got != nil || more {
		t.Errorf("nil Schedule's Between = %v, %v", got, more)
	}
}

func TestScheduleWords(t *testing.T) {
	tests := []struct{ expr, zone, want string }{
		{"0 9 * * *", "Europe/Istanbul", "at 09:00 every day (Europe/Istanbul)"},
		{"30 * * * *", "America/New_York", "at minute 30 of every hour (America/New_York)"},
		{"* * * * *", "UTC", "every minute (UTC)"},
		{"*/15 * * * *", "UTC", "every 15 minutes (UTC)"},
		{"0,30 * * * *", "UTC", "every 30 minutes (UTC)"},
		{"5,35 * * * *", "UTC", "at minutes 5 and 35 of every hour (UTC)"},
		{"0 9,17 * * *", "UTC", "at 09:00 and 17:00 every day (UTC)"},
		{"0 9-17 * * 1-5", "UTC", "at minute 0 of every hour from 09:00 to 17:00, every Monday to Friday (UTC)"},
		{"30 8 * * 1-5", "Europe/Berlin", "at 08:30 every Monday to Friday (Europe/Berlin)"},
		{"30 8 * * 1,3", "UTC", "at 08:30 every Monday and Wednesday (UTC)"},
		{"0 0 1 * *", "UTC", "at 00:00 on day 1 of every month (UTC)"},
		{"0 0 1,15 * *", "UTC", "at 00:00 on days 1 and 15 of every month (UTC)"},
		{"0 12 1 1,7 *", "UTC", "at 12:00 on day 1 of January and July (UTC)"},
		{"0 0 * 12 *", "UTC", "at 00:00 every day in December (UTC)"},
		{"0 0 13 * 5", "UTC", "at 00:00 on day 13 of every month and also every Friday (UTC)"},
		{"0 0 1-31 * 5", "UTC", "at 00:00 every day (UTC)"},
		{"@hourly", "UTC", "at minute 0 of every hour (UTC)"},
		{"@daily", "UTC", "at 00:00 every day (UTC)"},
		{"@weekly", "UTC", "at 00:00 every Sunday (UTC)"},
		{"@monthly", "UTC", "at 00:00 on day 1 of every month (UTC)"},
		{"@yearly", "UTC", "at 00:00 on 1 January every year (UTC)"},
		// No plain sentence: the expression itself.
		{"0 0 */2 * 5", "UTC", `on the cron schedule "0 0 */2 * 5" (UTC)`},
		{"*/7 9-17 * * *", "UTC", `on the cron schedule "*/7 9-17 * * *" (UTC)`},
		{"0 0 */2 * *", "UTC", `on the cron schedule "0 0 */2 * *" (UTC)`},
		{"0 0 13 6 5", "UTC", `on the cron schedule "0 0 13 6 5" (UTC)`},
	}
	for _, tc := range tests {
		if got := mustSchedule(t, tc.expr, tc.zone).Words(); got != tc.want {
			t.Errorf("Words(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// BenchmarkScheduleNext measures Next for a schedule that waits long: the last day of
// February in leap years.
func BenchmarkScheduleNext(b *testing.B) {
	s := mustSchedule(b, "0 0 29 2 *", "America/New_York")
	at := time.Date(2097, 3, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		s.Next(at)
	}
}

// TestScheduleZoneNames accepts the shapes of real IANA names.
func TestScheduleZoneNames(t *testing.T) {
	for _, zone := range []string{"UTC", "Etc/GMT+3", "Etc/GMT-14", "EST5EDT", "America/Port-au-Prince",
		"America/Argentina/Buenos_Aires", "America/North_Dakota/New_Salem", "Antarctica/DumontDUrville", "GMT0"} {
		if _, err := ParseSchedule("0 9 * * *", zone); err != nil {
			t.Errorf("%s: %v", zone, err)
		}
	}
}
