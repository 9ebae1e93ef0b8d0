package store

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestTimeCol(t *testing.T) {
	zone := time.FixedZone("X", -(9*3600 + 30*60))
	for _, tc := range []struct {
		name string
		in   time.Time
		want NullInt
		ok   bool
	}{
		{"zero", time.Time{}, NullInt{}, true},
		{"zero in another zone", time.Time{}.In(zone), NullInt{}, true},
		{"epoch", time.Unix(0, 0), NullInt{Int64: 0, Valid: true}, true},
		{"a nanosecond after the zero time", time.Time{}.Add(1), NullInt{}, false},
		{"first representable", time.Unix(0, math.MinInt64), NullInt{Int64: math.MinInt64, Valid: true}, true},
		{"last representable", time.Unix(0, math.MaxInt64).In(zone), NullInt{Int64: math.MaxInt64, Valid: true}, true},
		{"a nanosecond before the first", time.Unix(0, math.MinInt64).Add(-1), NullInt{}, false},
		{"a nanosecond after the last", time.Unix(0, math.MaxInt64).Add(1), NullInt{}, false},
		{"year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), NullInt{}, false},
		{"year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), NullInt{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TimeCol("token.IssuedAt", tc.in)
			if tc.ok != (err == nil) || got != tc.want {
				t.Fatalf("TimeCol = %+v, %v; want %+v, ok %v", got, err, tc.want, tc.ok)
			}
			if err != nil {
				if msg := err.Error(); !strings.HasPrefix(msg, "token.IssuedAt: ") || strings.Contains(msg, tc.in.Format(time.RFC3339)) {
					t.Errorf("error %q: want the field path and not the value", msg)
				}
				return
			}
			if back := got.Time(); !back.Equal(tc.in) || back.Location() != time.UTC {
				t.Errorf("Time() = %v, want %v in UTC", back, tc.in)
			}
		})
	}
}

func TestNowCol(t *testing.T) {
	if _, err := NowCol(time.Time{}); err == nil || !strings.Contains(err.Error(), "zero time") {
		t.Errorf("NowCol(zero) = %v, want the zero time refused", err)
	}
	if _, err := NowCol(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil || !strings.HasPrefix(err.Error(), "now: ") {
		t.Errorf("NowCol(3000) = %v, want the range refused, naming now", err)
	}
	now := time.Now() // with a monotonic reading, which a column has not
	n, err := NowCol(now)
	if err != nil || n != (NullInt{Int64: now.UnixNano(), Valid: true}) {
		t.Errorf("NowCol(now) = %+v, %v", n, err)
	}
}

func TestExpired(t *testing.T) {
	now := time.Now()
	at := NullInt{Int64: now.UnixNano(), Valid: true}
	for _, tc := range []struct {
		name    string
		expires NullInt
		now     time.Time
		want    bool
	}{
		{"never", NullInt{}, now, false},
		{"never, at the zero time", NullInt{}, time.Time{}, false},
		{"at its expiry", at, now, true},
		{"at its expiry, read back without a monotonic reading", at, at.Time(), true},
		{"a nanosecond before", at, now.Add(-1), false},
		{"a nanosecond after", at, now.Add(1), true},
		{"the zero time is before every expiry", NullInt{Int64: math.MinInt64, Valid: true}, time.Time{}, false},
	} {
		if got := Expired(tc.expires, tc.now); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
