package trigger

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseSchedule feeds ParseSchedule arbitrary expressions and zones. It must never
// panic; a refusal names its field on every line; and for a schedule it accepts, from an
// arbitrary instant between 1800 and 2200: Next is strictly later (or zero), Between over
// the next two days is strictly increasing and is exactly Next iterated, every firing is on
// the minute in the zone or at a change of the zone's offset (a gap), and the schedule
// parsed again from Expr and Zone fires the same.
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []struct {
		expr, zone string
		at         int64
	}{
		{"*/15 * * * *", "America/New_York", 1772949600}, // 2026-03-08 06:00Z, before the gap
		{"30 1 * * *", "America/New_York", 1793502000},   // 2026-11-01 03:00Z, before the overlap
		{"30 2 * * *", "Europe/Berlin", 1774742400},
		{"0 * * * *", "Australia/Lord_Howe", 1791034200},
		{"30 2 * * *", "Australia/Sydney", 1775318400},
		{"0 12 * * *", "Pacific/Apia", 1325152800},
		{"0 0 13 * 5", "UTC", 0},
		{"0 0 */2 * 5", "Europe/Istanbul", 1700000000},
		{"0 0 29 2 *", "UTC", 4012416000},
		{"@daily", "Asia/Kolkata", 1},
		{"@every 1m", "UTC", 0},
		{"TZ=UTC", "UTC", 0},
		{"CRON_TZ=UTC 0 9 * * *", "UTC", 0},
		{"0 0 30 2 *", "UTC", 0},
		{"0 0 9 * * *", "UTC", 0},
		{"mon-fri 0 * * *", "Local", 0},
		{"1-5/2,*/7 3 ? jan-dec sun", "America/Santiago", -1},
		{", , , , ,", "", 0},
	} {
		f.Add(seed.expr, seed.zone, seed.at)
	}
	const (
		base = -5364662400                       // 1800, when zones kept local mean time
		span = int64(400 * 365.2425 * 24 * 3600) // to 2200
		look = 25 * time.Hour                    // Between's window: a day and its change
		most = 1600                              // more than the window's minutes
	)
	f.Fuzz(func(t *testing.T, expr, zone string, at int64) {
		s, err := ParseSchedule(expr, zone)
		if err != nil {
			if s != nil {
				t.Fatal("a schedule with an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, fieldCron+": ") && !strings.HasPrefix(line, fieldZone+": ") {
					t.Fatalf("error line without its field: %q", line)
				}
			}
			return
		}
		if at < 0 {
			at = -(at + 1)
		}
		from := time.Unix(base+at%span, int64(at%1e9))

		next := s.Next(from)
		if !next.IsZero() && !next.After(from) {
			t.Fatalf("Next(%s) = %s, not after", from, next)
		}
		if !next.IsZero() && next.Sub(from) > MaxScheduleSearch {
			t.Fatalf("Next(%s) = %s, beyond MaxScheduleSearch", from, next)
		}

		got, more := s.Between(from, from.Add(look), most)
		if more {
			t.Fatalf("Between over %s left firings out of %d", look, most)
		}
		prev := from
		for i, g := range got {
			if !g.After(prev) {
				t.Fatalf("firing %d (%s) not after %s", i, g, prev)
			}
			if n := s.Next(prev); !n.Equal(g) {
				t.Fatalf("firing %d: Between says %s, Next says %s", i, g, n)
			}
			local := g.In(s.loc)
			_, offAt := local.Zone()
			_, offBefore := local.Add(-time.Second).Zone()
			if local.Second() != 0 && offAt == offBefore {
				t.Fatalf("firing %s is neither on the minute nor at a change of offset", local)
			}
			prev = g
		}
		if n := s.Next(prev); !n.IsZero() && !n.After(from.Add(look)) {
			t.Fatalf("Between stopped at %s, but Next fires at %s within the window", prev, n)
		}

		again, err := ParseSchedule(s.Expr(), s.Zone())
		if err != nil {
			t.Fatalf("Expr and Zone do not parse again: %v", err)
		}
		if a := again.Next(from); !a.Equal(next) {
			t.Fatalf("parsed again, Next = %s, want %s", a, next)
		}
		if w := s.Words(); !strings.HasSuffix(w, "("+s.Zone()+")") {
			t.Fatalf("Words %q does not name the zone", w)
		}
	})
}
