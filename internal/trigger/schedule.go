package trigger

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones load the same on a machine without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"
)

// The bounds of a schedule, each with its reason.
const (
	// MaxScheduleSearch is how far past its argument Next looks for a firing. Eight years and
	// a few days covers the longest wait of any expression that fires at all: a leap day
	// ("0 0 29 2 *") waits eight years across a skipped century leap year (2096 to 2104).
	MaxScheduleSearch = 8 * 366 * 24 * time.Hour

	// MaxCronBytes is the longest cron expression ParseSchedule reads; a longer one is refused
	// before parsing. Five fields of lists and ranges fit easily; more is data, not a schedule.
	MaxCronBytes = 256

	// MaxZoneBytes is the longest zone name ParseSchedule looks up. The longest IANA names are
	// about 30 bytes.
	MaxZoneBytes = 64

	// maxZoneOffset is more than any UTC offset in the tz database (local mean times
	// included, which reach about ±16h): before a wall time minus this offset, the wall clock
	// of every zone is still earlier than that wall time.
	maxZoneOffset = 30 * 60 * 60

	// maxZoneSegments bounds the zone periods that resolving one wall time walks through:
	// the walk spans about two days (maxZoneOffset before the wall time to its instant), and
	// no zone changes its offset anywhere near this often.
	maxZoneSegments = 64
)

// Field names in errors.
const (
	fieldCron = "schedule.cron"
	fieldZone = "schedule.time_zone"
)

// errFiveFields is the rule for the shape of a cron expression.
var errFiveFields = errors.New(fieldCron + ": must have five fields (minute hour day-of-month month day-of-week)")

// cronParser reads standard five-field expressions and the descriptors. Only its bit sets are
// used: firings are computed here (see Next), not by the library.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is the top bit robfig/cron sets in a field's bit set when the field was written
// with a "*" (or "?") and no step greater than one.
const starBit = 1 << 63

// The bit sets of every value of a field.
const (
	allMinutes = 1<<60 - 1        // 0-59
	allHours   = 1<<24 - 1        // 0-23
	allDom     = (1<<32 - 1) &^ 1 // 1-31
	allMonths  = (1<<13 - 1) &^ 1 // 1-12
	allDow     = 1<<7 - 1         // 0-6, Sunday is 0
)

// Schedule is a parsed cron schedule in a time zone.
//
// A schedule names wall-clock times in its zone, to the minute. A wall time that does not
// exist on a day (skipped by a spring-forward change) fires once, at the first instant after
// the gap, which is the instant of the change; several wall times in one gap, and a wall
// time at that instant itself, fire there once together. A wall time that occurs twice (a
// fall-back change) fires at its first occurrence only. Firings are strictly increasing.
//
// Day-of-month and day-of-week follow Vixie cron: when both fields are restricted (neither
// begins with "*"), a day matches if either matches; otherwise both must match.
//
// A Schedule is immutable and safe for concurrent use. The zero Schedule never fires; make
// one with ParseSchedule.
type Schedule struct {
	expr string
	zone string
	loc  *time.Location

	// Bit sets: bit i set means value i matches. No star bit.
	minute, hour, dom, month, dow uint64
	// domStar and dowStar record a field written beginning with "*" (Vixie's DOM_STAR and
	// DOW_STAR), which makes the day rule an AND instead of an OR.
	domStar, dowStar bool
}

// ParseSchedule parses a five-field cron expression (minute hour day-of-month month
// day-of-week, or a descriptor: @yearly, @annually, @monthly, @weekly, @daily, @midnight,
// @hourly; not @every, not @reboot) in the IANA zone (such as "Europe/Istanbul" or "UTC").
//
// The zone is required: "" is refused, and so is "Local", which depends on the machine. The
// expression names no zone of its own (a "TZ=" or "CRON_TZ=" prefix is refused), has no
// seconds field, and must fire at least once (so "0 0 30 2 *", February 30th, is refused).
//
// Errors name the field ("schedule.cron" or "schedule.time_zone") and the rule broken, never
// the value; when both fields are wrong, both are reported (errors.Join).
func ParseSchedule(expr, zone string) (*Schedule, error) {
	loc, zoneErr := parseZone(zone)
	s, exprErr := parseCron(expr)
	if err := errors.Join(exprErr, zoneErr); err != nil {
		return nil, err
	}
	s.expr, s.zone, s.loc = expr, zone, loc
	// Every day pattern recurs within a year except February 29th, and 2000 is a leap year:
	// a schedule that fires at all fires within MaxScheduleSearch of the start of 2000.
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, errors.New(fieldCron + ": never fires (no day matches the day-of-month and month fields)")
	}
	return s, nil
}

// parseZone loads an IANA zone by name.
func parseZone(zone string) (*time.Location, error) {
	switch {
	case zone == "":
		return nil, errors.New(fieldZone + ": is required (an IANA zone such as Europe/Istanbul, or UTC)")
	case zone == "Local":
		return nil, errors.New(fieldZone + ": must not be Local, which depends on the machine: name an IANA zone such as Europe/Istanbul")
	case len(zone) > MaxZoneBytes:
		return nil, fmt.Errorf("%s: must be at most %d bytes", fieldZone, MaxZoneBytes)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || !zoneNameShape(zone) {
		return nil, errors.New(fieldZone + ": must be an IANA zone name such as Europe/Istanbul")
	}
	return loc, nil
}

// zoneNameShape reports whether name looks like an IANA zone name: parts separated by "/",
// each beginning with a capital letter and made of ASCII letters, digits, "_", "-" and "+"
// ("America/Port-au-Prince", "Etc/GMT+3", "EST5EDT"). time.LoadLocation reads more than
// zones from the machine's zoneinfo folder, and those other names depend on the machine:
// "localtime" is a link to the machine's own zone, "posix/..." and "right/..." are copies
// that not every machine (nor the embedded time/tzdata) has.
func zoneNameShape(name string) bool {
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part[0] < 'A' || part[0] > 'Z' {
			return false
		}
		for _, c := range []byte(part) {
			ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '+'
			if !ok {
				return false
			}
		}
	}
	return true
}

// parseCron reads the expression into a Schedule's bit sets.
func parseCron(expr string) (*Schedule, error) {
	if len(expr) > MaxCronBytes {
		return nil, fmt.Errorf("%s: must be at most %d bytes", fieldCron, MaxCronBytes)
	}
	spec := strings.TrimSpace(expr)
	switch {
	case spec == "":
		return nil, errors.New(fieldCron + ": is required")
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		// robfig/cron would read the zone from here; the zone is schedule.time_zone alone.
		return nil, errors.New(fieldCron + ": must not name a time zone (TZ= or CRON_TZ=): the zone is " + fieldZone)
	case strings.HasPrefix(spec, "@every"):
		return nil, errors.New(fieldCron + ": must not be @every: a schedule names wall-clock times, not intervals")
	case strings.HasPrefix(spec, "@"):
		return parseDescriptor(spec)
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, errFiveFields
	}
	parsed, err := cronParser.Parse(spec)
	if err != nil {
		return nil, cronFieldError(fields)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, errFiveFields
	}
	s := fromSpec(ss)
	if s.hasEmptyField() {
		// A field of commas alone parses to no values at all.
		return nil, cronFieldError(fields)
	}
	// Vixie cron treats a day field as unrestricted when it begins with "*", steps included
	// ("*/2"); robfig/cron's star bit is cleared by a step, so read the text instead.
	s.domStar = isStarField(fields[2])
	s.dowStar = isStarField(fields[4])
	return s, nil
}

// parseDescriptor reads @yearly and the like.
func parseDescriptor(spec string) (*Schedule, error) {
	parsed, err := cronParser.Parse(spec)
	ss, ok := parsed.(*cron.SpecSchedule)
	if err != nil || !ok {
		return nil, errors.New(fieldCron + ": must be five fields or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly")
	}
	s := fromSpec(ss)
	s.domStar = ss.Dom&starBit != 0
	s.dowStar = ss.Dow&starBit != 0
	return s, nil
}

// fromSpec copies robfig/cron's bit sets without the star bit. The seconds field is not
// copied: without cron.Second the parser always sets it to 0.
func fromSpec(ss *cron.SpecSchedule) *Schedule {
	return &Schedule{
		minute: ss.Minute & allMinutes,
		hour:   ss.Hour & allHours,
		dom:    ss.Dom & allDom,
		month:  ss.Month & allMonths,
		dow:    ss.Dow & allDow,
	}
}

// isStarField reports a field written beginning with "*" (or robfig/cron's "?", which means
// the same), as Vixie cron reads it for the day rule.
func isStarField(field string) bool {
	return strings.HasPrefix(field, "*") || strings.HasPrefix(field, "?")
}

// cronFields names the five fields and their rules, for errors.
var cronFields = [5]struct{ name, rule string }{
	{"minute", "0-59"},
	{"hour", "0-23"},
	{"day-of-month", "1-31"},
	{"month", "1-12 or jan-dec"},
	{"day-of-week", "0-6 or sun-sat, Sunday is 0"},
}

// cronFieldError names the first field that does not parse on its own, by putting each field in
// turn into an expression whose other fields are "*".
func cronFieldError(fields []string) error {
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		parsed, err := cronParser.Parse(strings.Join(probe, " "))
		empty := false
		if ss, ok := parsed.(*cron.SpecSchedule); ok {
			empty = fromSpec(ss).hasEmptyField()
		}
		if err != nil || empty {
			return fmt.Errorf("%s: %s: must be values %s, as a list of values, ranges (a-b) and steps (/n), or *",
				fieldCron, cronFields[i].name, cronFields[i].rule)
		}
	}
	return errors.New(fieldCron + ": must be a cron expression of five fields (minute hour day-of-month month day-of-week)")
}

// hasEmptyField reports a field with no values, such as one written as commas alone.
func (s *Schedule) hasEmptyField() bool {
	return s.minute == 0 || s.hour == 0 || s.dom == 0 || s.month == 0 || s.dow == 0
}

// Expr returns the cron expression as it was given to ParseSchedule.
func (s *Schedule) Expr() string { return s.expr }

// Zone returns the IANA zone name as it was given to ParseSchedule.
func (s *Schedule) Zone() string { return s.zone }

// Next returns the first firing strictly after t, in the schedule's zone, or the zero time
// when there is none within MaxScheduleSearch of t (or s is the zero Schedule, or t is
// within MaxScheduleSearch of the end of time.Time's range).
//
// Next walks the calendar in the zone: a day at a time while the day does not match (a
// month at a time while the month does not), then the matching hours and minutes of a
// matching day, and resolves each matching wall time to an instant (see resolve). It never
// steps minute by minute through days that do not match.
func (s *Schedule) Next(t time.Time) time.Time {
	if s == nil || s.loc == nil {
		return time.Time{}
	}
	limit := t.Add(MaxScheduleSearch)
	if !limit.After(t) {
		// t is so near the end of time.Time's range that the search would overflow.
		return time.Time{}
	}
	lw := t.In(s.loc)
	y, mo, d := lw.Date()
	h, mi := lw.Hour(), lw.Minute()
	ly, lmo, ld := limit.In(s.loc).Date()
	// One day past the limit's date: a wall time on it can still resolve before the limit in
	// a zone that skipped a day.
	last := time.Date(ly, lmo, ld+1, 0, 0, 0, 0, time.UTC)
	// day is the civil date being tried, as midnight UTC: plain calendar arithmetic, no zone.
	day := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	for !day.After(last) {
		dy, dmo, dd := day.Date()
		if s.month&(1<<uint(dmo)) == 0 {
			day = time.Date(dy, dmo+1, 1, 0, 0, 0, 0, time.UTC)
			h, mi = 0, 0
			continue
		}
		if !s.dayMatches(dd, day.Weekday()) {
			day = day.AddDate(0, 0, 1)
			h, mi = 0, 0
			continue
		}
		for hh := nextSetBit(s.hour, h); hh >= 0; hh = nextSetBit(s.hour, hh+1) {
			from := 0
			if hh == h {
				from = mi
			}
			for mm := nextSetBit(s.minute, from); mm >= 0; mm = nextSetBit(s.minute, mm+1) {
				f := time.Unix(s.resolve(day.Unix()+int64(hh)*3600+int64(mm)*60), 0)
				if !f.After(t) {
					// A wall time before t's, or the first occurrence of a wall time that t
					// is at the second occurrence of, or a gap already fired at.
					continue
				}
				if f.After(limit) {
					return time.Time{}
				}
				return f.In(s.loc)
			}
		}
		day = day.AddDate(0, 0, 1)
		h, mi = 0, 0
	}
	return time.Time{}
}

// dayMatches applies Vixie cron's day rule to a day of the month and its weekday.
func (s *Schedule) dayMatches(dom int, wd time.Weekday) bool {
	domOK := s.dom&(1<<uint(dom)) != 0
	dowOK := s.dow&(1<<uint(wd)) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextSetBit returns the lowest set bit of set at or above from, or -1 when there is none.
func nextSetBit(set uint64, from int) int {
	if from >= 64 {
		return -1
	}
	rest := set >> uint(from) << uint(from)
	if rest == 0 {
		return -1
	}
	return bits.TrailingZeros64(rest)
}

// resolve returns the instant (Unix seconds) a wall time fires at: the first instant at which
// the zone's wall clock reaches or passes it. w is the wall time written as Unix seconds as if
// it were UTC.
//
// That one rule gives all three cases: a wall time that occurs once fires then; one that
// occurs twice (a fall-back overlap) fires at its first occurrence, when the clock first
// reaches it; one that does not exist (a spring-forward gap) fires at the instant of the
// change, when the clock jumps past it. It is non-decreasing in w, which Next relies on.
//
// It walks the zone's periods from well before w (maxZoneOffset): within a period the offset
// is fixed and the wall clock increases with the instant.
func (s *Schedule) resolve(w int64) int64 {
	u := w - maxZoneOffset
	for range maxZoneSegments {
		at := time.Unix(u, 0).In(s.loc)
		_, off := at.Zone()
		_, end := at.ZoneBounds()
		x := w - int64(off) // the instant this period's clock shows w
		switch {
		case x <= u:
			// The clock already shows w or later at the period's start: it jumped past w at
			// the change that began this period.
			return u
		case end.IsZero() || x < end.Unix():
			return x
		case end.Unix() <= u:
			// Not expected of the tz database; stop rather than loop.
			return x
		}
		u = end.Unix()
	}
	return u
}

// Between returns the firings f with after < f <= upto, in order, at most max of them, and
// whether more firings in that window were left out. A max of zero or less returns none
// (and reports whether there are any). Each firing is Next of the one before, starting from
// after.
func (s *Schedule) Between(after, upto time.Time, max int) (firings []time.Time, more bool) {
	for f := s.Next(after); !f.IsZero() && !f.After(upto); f = s.Next(f) {
		if len(firings) >= max {
			return firings, true
		}
		firings = append(firings, f)
	}
	return firings, false
}

// Words says the schedule in plain English for the person approving a trigger, such as
// "at 09:00 every day (Europe/Istanbul)" or "at minute 30 of every hour (America/New_York)".
// A schedule it has no plain sentence for is said as `on the cron schedule "..." (Zone)`.
// The sentence says what the fields say; it does not mention daylight-saving changes (see
// Schedule for how those fire).
func (s *Schedule) Words() string {
	when, subDaily, ok := s.timeWords()
	days, dayOK := s.dayWords()
	if !ok || !dayOK {
		return fmt.Sprintf("on the cron schedule %q (%s)", s.expr, s.zone)
	}
	switch {
	case days == "every day" && subDaily:
		return fmt.Sprintf("%s (%s)", when, s.zone)
	case subDaily:
		return fmt.Sprintf("%s, %s (%s)", when, days, s.zone)
	default:
		return fmt.Sprintf("%s %s (%s)", when, days, s.zone)
	}
}

// timeWords says the minute and hour fields. subDaily reports a phrase about the hours of a
// day ("every minute", "at minute 5 of every hour") rather than clock times ("at 09:00").
func (s *Schedule) timeWords() (words string, subDaily, ok bool) {
	minutes, hours := cronValues(s.minute), cronValues(s.hour)
	allHoursSet := s.hour == allHours
	switch {
	case s.minute == allMinutes && allHoursSet:
		return "every minute", true, true
	case allHoursSet && len(minutes) > 1 && evenSteps(minutes, 60):
		return fmt.Sprintf("every %d minutes", minutes[1]), true, true
	case allHoursSet && len(minutes) == 1:
		return fmt.Sprintf("at minute %d of every hour", minutes[0]), true, true
	case allHoursSet && len(minutes) <= 4:
		return fmt.Sprintf("at minutes %s of every hour", joinWords(minutes, strconv.Itoa)), true, true
	case len(minutes) != 1:
		return "", false, false
	case len(hours) == 1:
		return "at " + hhmm(hours[0], minutes[0]), false, true
	case len(hours) <= 4:
		return "at " + joinWords(hours, func(h int) string { return hhmm(h, minutes[0]) }), false, true
	case consecutive(hours):
		return fmt.Sprintf("at minute %d of every hour from %s to %s",
			minutes[0], hhmm(hours[0], minutes[0]), hhmm(hours[len(hours)-1], minutes[0])), true, true
	}
	return "", false, false
}

// dayWords says the day-of-month, month and day-of-week fields together.
func (s *Schedule) dayWords() (string, bool) {
	doms, months, dows := cronValues(s.dom), cronValues(s.month), cronValues(s.dow)
	domAll, dowAll, monthAll := s.dom == allDom, s.dow == allDow, s.month == allMonths
	monthNames := joinWords(months, func(m int) string { return time.Month(m).String() })
	if len(months) > 6 && !monthAll {
		return "", false
	}
	inMonths := ""
	if !monthAll {
		inMonths = " in " + monthNames
	}
	domWords := func() (string, bool) {
		switch {
		case len(doms) > 5:
			return "", false
		case len(doms) == 1 && len(months) == 1:
			return fmt.Sprintf("on %d %s every year", doms[0], monthNames), true
		}
		of := "every month"
		if !monthAll {
			of = monthNames
		}
		if len(doms) == 1 {
			return fmt.Sprintf("on day %d of %s", doms[0], of), true
		}
		return fmt.Sprintf("on days %s of %s", joinWords(doms, strconv.Itoa), of), true
	}
	dowWords := "every " + weekdayWords(dows)
	if s.domStar || s.dowStar {
		// Both fields must match. A "*" field with a step ("*/2") restricts its field yet
		// still makes the rule an AND: too subtle for a sentence.
		if s.domStar && !domAll || s.dowStar && !dowAll {
			return "", false
		}
		switch {
		case domAll && dowAll:
			return "every day" + inMonths, true
		case domAll:
			return dowWords + inMonths, true
		default:
			return domWords()
		}
	}
	// Either field may match.
	switch {
	case domAll || dowAll:
		return "every day" + inMonths, true
	case !monthAll:
		return "", false
	}
	dw, ok := domWords()
	return dw + " and also " + dowWords, ok
}

// cronValues lists the set bits of a field.
func cronValues(set uint64) []int {
	var out []int
	for v := nextSetBit(set, 0); v >= 0; v = nextSetBit(set, v+1) {
		out = append(out, v)
	}
	return out
}

// evenSteps reports whether vs is 0, n, 2n, ... through the end of a field of size values,
// with n dividing size: "*/15" for minutes.
func evenSteps(vs []int, size int) bool {
	n := vs[1]
	if vs[0] != 0 || size%n != 0 || len(vs) != size/n {
		return false
	}
	for i, v := range vs {
		if v != i*n {
			return false
		}
	}
	return true
}

// consecutive reports whether vs is a run of consecutive values.
func consecutive(vs []int) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return false
		}
	}
	return true
}

// weekdayWords names days of the week: "Monday", "Monday and Friday", "Monday to Friday".
func weekdayWords(ds []int) string {
	name := func(d int) string { return time.Weekday(d).String() }
	if len(ds) >= 3 && consecutive(ds) {
		return name(ds[0]) + " to " + name(ds[len(ds)-1])
	}
	return joinWords(ds, name)
}

// joinWords joins values as "a", "a and b", "a, b and c".
func joinWords(vs []int, say func(int) string) string {
	words := make([]string, len(vs))
	for i, v := range vs {
		words[i] = say(v)
	}
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

func hhmm(h, m int) string { return fmt.Sprintf("%02d:%02d", h, m) }
