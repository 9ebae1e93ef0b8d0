package store

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Times are kept as Unix nanoseconds (UTC), NULL for the zero time, in both schemas: a time
// comes back as the same instant in UTC, and a time outside what int64 nanoseconds can hold
// (before 1678 or after 2262) is refused rather than wrapped around.

// Bounds of what int64 Unix nanoseconds can hold.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// TimeCol is t as a column value: its Unix nanoseconds, or NULL for the zero time. A time
// outside the years 1678 to 2262 is an error naming field (a path such as "token.IssuedAt").
func TimeCol(field string, t time.Time) (NullInt, error) {
	n, ok := timeCol(t)
	if !ok {
		return NullInt{}, outsideTimes(field)
	}
	return n, nil
}

// timeCol is TimeCol without the field's name, which costs an allocation where it is made
// (CheckAudit's "entries[i].At"): false for a time outside the years 1678 to 2262.
func timeCol(t time.Time) (NullInt, bool) {
	if t.IsZero() {
		return NullInt{}, true
	}
	if t.Before(minTime) || t.After(maxTime) {
		return NullInt{}, false
	}
	return NullInt{Int64: t.UnixNano(), Valid: true}, true
}

func outsideTimes(field string) error {
	return fmt.Errorf("%s: time outside the years 1678 to 2262", field)
}

// NowCol is the time a check is made at (TakeUse's now, ListTokens' and ExpireConsents'), as
// TimeCol has it; the zero time is an error, since nothing can be checked at no time.
func NowCol(now time.Time) (NullInt, error) {
	n, err := TimeCol("now", now)
	if err == nil && !n.Valid {
		err = errors.New("now is the zero time")
	}
	return n, err
}

// Time reads n as a time column: the instant in UTC, or the zero time for NULL.
func (n NullInt) Time() time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// Expired reports whether a record that expires at expires (NULL: never) has expired at
// now: at or after it. It is the rule for tokens and consent requests alike.
func Expired(expires NullInt, now time.Time) bool {
	return expires.Valid && !now.Before(expires.Time())
}

// times converts several times of one record, keeping the first error.
type times struct {
	err error
}

func (ts *times) col(field string, t time.Time) NullInt {
	n, err := TimeCol(field, t)
	if err != nil && ts.err == nil {
		ts.err = err
	}
	return n
}
