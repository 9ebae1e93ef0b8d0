package consent

import (
	"strconv"
	"time"
)

// ShowDuration says d the way a person reads it, in its two largest units with the smaller
// left out when it is zero: "45 s", "4 min 10 s", "23 h 59 min", "1 day", "29 days 4 h". It
// rounds to the smaller unit shown, so 23 h 59 min 56 s is "1 day", not "23 h 59 min"; a
// negative d is said as its size. Every duration capgate shows a person (the approval page,
// its script, `capgate approvals`) is said by this function or its copy in the page's script
// (assets/app.js, words), so that the two never disagree.
func ShowDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if s := d.Round(time.Second); s < time.Hour {
		n := int64(s / time.Second)
		if n < 60 {
			return strconv.FormatInt(n, 10) + " s"
		}
		return pair(n/60, "min", n%60, "s")
	}
	if m := d.Round(time.Minute); m < 24*time.Hour {
		n := int64(m / time.Minute)
		return pair(n/60, "h", n%60, "min")
	}
	n := int64(d.Round(time.Hour) / time.Hour)
	days := "days"
	if n/24 == 1 {
		days = "day"
	}
	return pair(n/24, days, n%24, "h")
}

// pair is "a ua b ub", or "a ua" when b is zero.
func pair(a int64, ua string, b int64, ub string) string {
	s := strconv.FormatInt(a, 10) + " " + ua
	if b != 0 {
		s += " " + strconv.FormatInt(b, 10) + " " + ub
	}
	return s
}

// ShowDate says t in UTC to the minute, month first in English: "Dec 30, 2026 14:00 UTC".
func ShowDate(t time.Time) string { return t.UTC().Format("Jan 2, 2006 15:04 UTC") }

// ShowWhen says when t is, seen at now: "in 29 days 4 h (Dec 30, 2026 14:00 UTC)", or
// "5 min ago (...)" for a time past.
func ShowWhen(t, now time.Time) string {
	d := t.Sub(now)
	if d < 0 {
		return ShowDuration(d) + " ago (" + ShowDate(t) + ")"
	}
	return "in " + ShowDuration(d) + " (" + ShowDate(t) + ")"
}
