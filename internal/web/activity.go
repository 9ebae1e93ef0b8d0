package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/store"
)

// activityView is the activity page: the filter as asked, one page of matching records
// newest first, and what audit.Verify found.
type activityView struct {
	Filter  activityFilter
	Clients []clientOption
	Entries []entryView
	// Older is the filter of the next (older) page, nil when there is none.
	Older *olderPage
	// Paged is set beyond the first page, so that the page links back to the newest.
	Paged  bool
	Verify verifyView
}

// clientOption is a client in the filter's list.
type clientOption struct {
	ID, Name string
	Selected bool
}

// entryView is one audit record as the page shows it. Its strings were written by capgate,
// but some (app, method, audit tag, explanation) echo what an agent sent: all are text.
type entryView struct {
	Seq         int64
	Time        string
	Client      string // the client's name, else its id
	Action      string
	App         string
	Method      string
	Capability  string
	Permission  string
	Decision    string
	Kind        string
	Code        string
	Result      string
	Explanation string
	AuditTag    string
	CallID      string
	TokenID     string
	ConsentID   string
	ParamsHash  string // never the params themselves: the log holds only their hash
	Duration    string
	Broken      bool // the body does not decode: audit verify says why
	// Undo is set on a successful call's outcome while its undo window is open: the page
	// offers to undo it, and counts down to UndoUntil (Unix milliseconds).
	Undo      bool
	UndoUntil int64
	UndoLeft  string
}

// verifyView is audit.Verify's report in plain words.
type verifyView struct {
	OK       bool
	Text     string
	Problems []string
	Warnings []string
}

// activityFilter is the activity page's query, validated: every field optional.
type activityFilter struct {
	Client   string // a client id
	App      string // as the caller named it (alias or app id)
	Decision string // allow, ask, handoff, deny
	From, To string // as given, for the form
	from, to int64  // Unix seconds, 0 for unset; to is inclusive
	before   int64  // show records with seq < before; 0: from the newest
}

// timeLayouts are the accepted spellings of the time range, in UTC unless a zone is given:
// the browser's datetime-local input, RFC 3339, and a bare date.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"}

// parseFilter validates the activity page's query; the problems name the field, never the
// value.
func parseFilter(q url.Values) (activityFilter, error) {
	f := activityFilter{Client: q.Get("client"), App: q.Get("app"), Decision: q.Get("decision"), From: q.Get("from"), To: q.Get("to")}
	var errs []error
	text := func(name, v string) {
		if len(v) > audit.MaxFieldBytes || !utf8.ValidString(v) || strings.ContainsFunc(v, func(c rune) bool { return hidden(c, false) }) {
			errs = append(errs, fmt.Errorf("%s: must be plain text of at most %d bytes", name, audit.MaxFieldBytes))
		}
	}
	text("client", f.Client)
	text("app", f.App)
	switch f.Decision {
	case "", audit.DecisionAllow, audit.DecisionAsk, audit.DecisionHandoff, audit.DecisionDeny:
	default:
		errs = append(errs, errors.New("decision: must be allow, ask, handoff or deny"))
	}
	when := func(name, v string, end bool) int64 {
		if v == "" {
			return 0
		}
		for _, l := range timeLayouts {
			if t, err := time.ParseInLocation(l, v, time.UTC); err == nil {
				switch {
				case l == "2006-01-02" && end:
					return t.Add(24*time.Hour).Unix() - 1
				case l == "2006-01-02T15:04" && end:
					return t.Add(time.Minute).Unix() - 1
				}
				return t.Unix()
			}
		}
		errs = append(errs, fmt.Errorf("%s: must be a time such as 2026-01-31T14:05 (UTC) or RFC 3339", name))
		return 0
	}
	f.from, f.to = when("from", f.From, false), when("to", f.To, true)
	if f.from != 0 && f.to != 0 && f.to < f.from {
		errs = append(errs, errors.New("to: must not be before from"))
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 2 {
			errs = append(errs, errors.New("before: must be a record number above 1"))
		}
		f.before = n
	}
	return f, errors.Join(errs...)
}

// filtered reports whether the filter narrows the log at all.
func (f activityFilter) filtered() bool {
	return f.Client != "" || f.App != "" || f.Decision != "" || f.from != 0 || f.to != 0
}

// match reports whether the record r passes the filter.
func (f activityFilter) match(r audit.Record) bool {
	return (f.Client == "" || r.ClientID == f.Client) && (f.App == "" || r.App == f.App) &&
		(f.Decision == "" || r.Decision == f.Decision) && (f.from == 0 || r.Timestamp >= f.from) && (f.to == 0 || r.Timestamp <= f.to)
}

// olderPage is the query of the link to older records: the same filter, before a record.
// The template writes each field into the link as a query component, escaped.
type olderPage struct {
	Client, App, Decision, From, To string
	Before                          int64
}

// activity is the audit log page.
func (s *Server) activity(w http.ResponseWriter, r *http.Request, csrf string) {
	if s.o.Store == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no activity log.")
		return
	}
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.message(w, http.StatusBadRequest, "This filter does not work", strings.ReplaceAll(err.Error(), "\n", "; "))
		return
	}
	ctx := r.Context()
	v := &activityView{Filter: f, Paged: f.before != 0}
	names := map[string]string{}
	clients, err := s.o.Store.ListClients(ctx)
	if err != nil {
		s.o.Logger.Warn("web: listing clients failed", "err", err)
	}
	for _, c := range clients {
		names[c.ID] = reveal(c.Name, false)
		v.Clients = append(v.Clients, clientOption{ID: c.ID, Name: names[c.ID], Selected: c.ID == f.Client})
	}
	if err := s.readActivity(r, f, names, v); err != nil {
		s.o.Logger.Warn("web: reading the audit log failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not read the audit log. Its log says why.")
		return
	}
	now := s.o.Now()
	s.markUndoable(r, v, now)
	v.Verify = s.verify(r)
	s.render(w, http.StatusOK, "activity.html", page{Title: "Activity", Nav: "activity", CSRF: csrf, Activity: v, Now: now})
}

// markUndoable offers undo on the successful calls listed whose undo window is open at now.
func (s *Server) markUndoable(r *http.Request, v *activityView, now time.Time) {
	if s.o.Broker == nil {
		return
	}
	u, err := s.o.Broker.Undoable(r.Context())
	if err != nil {
		s.o.Logger.Warn("web: listing the calls that can be undone failed", "err", err)
		return
	}
	for i := range v.Entries {
		e := &v.Entries[i]
		if c, ok := u[e.CallID]; ok && e.Kind == audit.KindOutcome && e.Result == "success" && e.Action != "undo" && now.Before(c.Until) {
			e.Undo, e.UndoUntil, e.UndoLeft = true, c.Until.UnixMilli(), timeLeft(c.Until, now)
		}
	}
}

// undo reverts a call on the person's behalf, through the broker as an agent's undo goes
// (audited there), then shows the activity page, where the undo is the newest record.
func (s *Server) undo(w http.ResponseWriter, r *http.Request, _ string) {
	if s.o.Broker == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway cannot undo calls here.")
		return
	}
	id := r.PostForm.Get("call")
	if id == "" || len(id) > maxIDBytes {
		s.message(w, http.StatusBadRequest, "Nothing to undo", "The field call must name a call.")
		return
	}
	err := s.o.Broker.UndoCall(r.Context(), id, person)
	switch {
	case err == nil:
		http.Redirect(w, r, "/ui/activity", http.StatusSeeOther)
	case errors.Is(err, broker.ErrUndoUnknown):
		s.message(w, http.StatusConflict, "Cannot be undone", "This call can no longer be undone: it was undone already, or its undo window passed.")
	case errors.Is(err, broker.ErrUndoExpired):
		s.message(w, http.StatusConflict, "Too late", "This call's undo window has passed: it can no longer be undone.")
	case errors.Is(err, broker.ErrUndoNotSupp):
		s.message(w, http.StatusConflict, "Cannot be undone", "The app that ran this call cannot undo it.")
	default:
		s.o.Logger.Warn("web: undoing a call failed", "err", err)
		s.message(w, http.StatusInternalServerError, "The undo failed", "capgate asked the app to undo the call, and it failed, or the undo could not be recorded. The activity log and capgate's log say more.")
	}
}

// readActivity fills v with one page of the records matching f, newest first, reading the
// log backwards a chunk at a time and at most MaxActivityScan records per page.
func (s *Server) readActivity(r *http.Request, f activityFilter, names map[string]string, v *activityView) error {
	h, err := s.o.Store.AuditHead(r.Context())
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	hi := h.Seq
	if f.before != 0 {
		hi = min(hi, f.before-1)
	}
	scanned := 0
	for hi >= 1 {
		lo := max(1, hi-activityChunk+1)
		es, err := s.o.Store.AuditRange(r.Context(), lo, hi, 0)
		if err != nil {
			return err
		}
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			scanned++
			d, err := audit.DecodeEntry(e)
			if err != nil {
				if !f.filtered() {
					v.Entries = append(v.Entries, entryView{Seq: e.Seq, Time: showTime(e.At), Broken: true})
				}
			} else if f.match(d.Record) {
				v.Entries = append(v.Entries, newEntryView(d, names))
			}
			if len(v.Entries) == ActivityPage || scanned == MaxActivityScan {
				if e.Seq > 1 {
					v.Older = &olderPage{Client: f.Client, App: f.App, Decision: f.Decision, From: f.From, To: f.To, Before: e.Seq}
				}
				return nil
			}
		}
		hi = lo - 1
	}
	return nil
}

// newEntryView builds the view of a decoded entry; names maps client ids to names.
func newEntryView(e audit.Entry, names map[string]string) entryView {
	r := e.Record
	v := entryView{Seq: e.Seq, Time: showTime(time.Unix(r.Timestamp, 0)), Client: names[r.ClientID],
		Action: reveal(r.Action, false), App: reveal(r.App, false), Method: reveal(r.Method, false),
		Capability: reveal(r.Capability, false), Permission: reveal(r.Permission, false), Decision: reveal(r.Decision, false),
		Kind: reveal(r.Kind, false), Code: reveal(r.Code, false), Result: reveal(r.Result, false),
		Explanation: reveal(r.Explanation, true), AuditTag: reveal(r.AuditTag, true), CallID: reveal(r.CallID, false),
		TokenID: reveal(r.TokenID, false), ConsentID: reveal(r.ConsentID, false), ParamsHash: reveal(r.ParamsHash, false)}
	if v.Client == "" {
		v.Client = reveal(r.ClientID, false)
	}
	if r.Kind == audit.KindOutcome {
		v.Duration = strconv.FormatInt(r.DurationMS, 10) + " ms"
	}
	return v
}

// verdictCache holds what audit.Verify last found, keyed by what it read: the log's head
// (seq and hash) and the number of checkpoints. Verify reads the whole log, so the activity
// page runs it again only when the log grew or a checkpoint was added. The cost: an old
// entry altered in place, the head unchanged, shows on the page only once the log grows
// again (the next call does that); `capgate audit verify` always reads everything.
type verdictCache struct {
	mu  sync.Mutex // held while Verify runs, so that loads at once wait for one run
	key verdictKey
	v   verifyView
	ok  bool
}

// verdictKey is what a verdict was found for.
type verdictKey struct {
	seq         int64
	hash        string
	checkpoints int
}

// verify says what audit.Verify finds in the log, in plain words, running it only when the
// log changed since its last run (verdictCache).
func (s *Server) verify(r *http.Request) verifyView {
	if len(s.o.PublicKey) == 0 {
		return verifyView{Text: "not checked: this page was not given the gateway's public key"}
	}
	ctx := r.Context()
	var key verdictKey
	h, err := s.o.Store.AuditHead(ctx)
	if err == nil {
		key.seq, key.hash = h.Seq, h.Hash
	}
	var cps []store.Checkpoint
	if err == nil || errors.Is(err, store.ErrNotFound) {
		cps, err = s.o.Store.Checkpoints(ctx)
		key.checkpoints = len(cps)
	}
	if err != nil {
		s.o.Logger.Warn("web: reading the audit log's head failed", "err", err)
		return verifyView{Text: "not checked: capgate could not read the log (its log says why)"}
	}
	c := &s.verdict
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.key == key {
		return c.v
	}
	var opts *audit.VerifyOptions
	if s.o.AuditHeadFile != "" {
		opts = &audit.VerifyOptions{HeadFile: s.o.AuditHeadFile, State: s.o.Store}
	}
	rep, err := audit.VerifyWith(ctx, s.o.Store, s.o.PublicKey, opts)
	if err != nil {
		s.o.Logger.Warn("web: verifying the audit log failed", "err", err)
		return verifyView{Text: "not checked: capgate could not read the log (its log says why)"}
	}
	c.key, c.v, c.ok = key, verdictOf(rep), true
	return c.v
}

// verdictOf says a report in plain words.
func verdictOf(rep audit.Report) verifyView {
	v := verifyView{OK: rep.OK()}
	cp := "no checkpoint yet"
	if rep.LastCheckpointSeq > 0 {
		cp = "last checkpoint at seq " + strconv.FormatInt(rep.LastCheckpointSeq, 10)
	}
	if v.OK {
		v.Text = "intact: " + strconv.FormatInt(rep.Entries, 10) + " records, " + cp
	} else {
		n := len(rep.Problems) + rep.ProblemsOmitted
		v.Text = "NOT intact: " + strconv.Itoa(n) + " problem(s) in " + strconv.FormatInt(rep.Entries, 10) + " records (" + cp + ")"
	}
	for i, p := range rep.Problems {
		if i == maxProblemsShown {
			v.Problems = append(v.Problems, "and "+strconv.Itoa(len(rep.Problems)-i+rep.ProblemsOmitted)+" more: run capgate audit verify")
			break
		}
		v.Problems = append(v.Problems, reveal(p.String(), false))
	}
	for _, p := range rep.Warnings {
		v.Warnings = append(v.Warnings, reveal(p.Rule, false))
	}
	return v
}
