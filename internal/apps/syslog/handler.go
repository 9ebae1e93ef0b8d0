package syslog

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Handler returns a slog.Handler that records every record it handles in r and hands it on to
// next, so that the gateway can log through it. An entry's message is the record's message
// followed by its attributes as key=value text (groups as dotted key prefixes, values quoted
// when they need it), cut to MaxEntryBytes. Levels below Warn are info, below Error warn, and
// Error and above error; a record below Warn that begins "[OK]" or carries the top-level
// attribute ok=true is ok.
//
// When next is nil, Handler only records, and records Info and above. Otherwise it records
// what next is enabled for, and returns next's error.
func (r *Ring) Handler(next slog.Handler) slog.Handler { return &handler{ring: r, next: next} }

type handler struct {
	ring   *Ring
	next   slog.Handler
	attrs  string // the attributes of WithAttrs, rendered, each with its leading space
	groups string // the open groups, each followed by a dot
	ok     bool   // WithAttrs gave ok=true outside any group
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	if h.next != nil {
		return h.next.Enabled(ctx, l)
	}
	return l >= slog.LevelInfo
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	w := text{room: MaxEntryBytes}
	w.write(rec.Message)
	w.write(h.attrs)
	ok := h.ok || strings.HasPrefix(rec.Message, "[OK]")
	rec.Attrs(func(a slog.Attr) bool {
		ok = ok || (h.groups == "" && isOK(a))
		w.attr(h.groups, a)
		return true
	})
	h.ring.add(rec.Time, severity(rec.Level, ok), w.String())
	if h.next != nil {
		return h.next.Handle(ctx, rec)
	}
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	h2 := *h
	w := text{room: MaxEntryBytes - len(h.attrs)}
	for _, a := range as {
		h2.ok = h2.ok || (h.groups == "" && isOK(a))
		w.attr(h.groups, a)
	}
	h2.attrs += w.String()
	if h.next != nil {
		h2.next = h.next.WithAttrs(as)
	}
	return &h2
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.groups += name + "."
	if h.next != nil {
		h2.next = h.next.WithGroup(name)
	}
	return &h2
}

func isOK(a slog.Attr) bool {
	v := a.Value.Resolve()
	return a.Key == "ok" && v.Kind() == slog.KindBool && v.Bool()
}

func severity(l slog.Level, ok bool) string {
	switch {
	case l >= slog.LevelError:
		return SeverityError
	case l >= slog.LevelWarn:
		return SeverityWarn
	case ok:
		return SeverityOK
	}
	return SeverityInfo
}

// text builds an entry's message in at most room bytes; what does not fit is dropped, and the
// end marked with an ellipsis.
type text struct {
	b    strings.Builder
	room int
	cut  bool
}

func (w *text) write(s string) {
	if len(s) > w.room-w.b.Len() {
		w.cut = true
		s = cutRunes(s, max(0, w.room-w.b.Len()))
	}
	w.b.WriteString(s)
}

func (w *text) full() bool { return w.b.Len() >= w.room }

// String returns the text, its end replaced by an ellipsis when anything was dropped.
func (w *text) String() string {
	s := w.b.String()
	if w.cut {
		s = cutRunes(s, max(0, w.room-len(ellipsis))) + ellipsis
	}
	return s
}

// attr writes " key=value" for a, as slog's rules say: a zero Attr and an empty group are
// left out, a group's attributes are written with its key as a prefix, and a group with an
// empty key is inlined.
func (w *text) attr(groups string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			groups += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			w.attr(groups, g)
		}
		return
	}
	if w.full() {
		w.cut = true
		return
	}
	w.write(" ")
	w.write(quote(groups+a.Key, w.room))
	w.write("=")
	w.write(quote(value(a.Value, w.room), w.room))
}

// value renders v as text of at most about limit bytes (a String or error method may make
// more; it is cut when written).
func value(v slog.Value, limit int) string {
	switch v.Kind() {
	case slog.KindString:
		return cutRunes(v.String(), limit)
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return cutRunes(err.Error(), limit)
		}
		return cutRunes(fmt.Sprint(v.Any()), limit)
	}
	return v.String()
}

// quote returns s as it is when it needs no quoting, else quoted as Go does: a key or value
// with spaces, '=', quotes or invisible characters cannot be mistaken for another pair.
func quote(s string, limit int) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r == '=' || r == '"' || r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return strconv.Quote(cutRunes(s, limit))
		}
	}
	return s
}
