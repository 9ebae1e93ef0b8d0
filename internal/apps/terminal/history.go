package terminal

import (
	"sync"
	"time"
	"unicode/utf8"
)

// The statuses of a command in the history.
const (
	statusRunning   = "running"
	statusSuccess   = "success"
	statusError     = "error"
	statusTimeout   = "timeout"
	statusCancelled = "cancelled"
)

// entry is one command of the history. The fields above mu never change once added.
type entry struct {
	id         int64
	client     string // the caller's ClientID: only it sees the entry
	command    string
	background bool
	started    time.Time

	mu       sync.Mutex
	status   string
	exitCode *int
	duration *int64   // ms
	stdout   *capture // nil when not captured, or dropped
	stderr   *capture
	kept     bool // the output is captured and still kept
}

// view is what read_output and history answer of an entry.
type view struct {
	ID         int64   `json:"id"`
	Command    string  `json:"command"`
	Status     string  `json:"status"`
	ExitCode   *int    `json:"exit_code"`
	DurationMS *int64  `json:"duration_ms"`
	StartedAt  *string `json:"started_at,omitempty"`
	Background *bool   `json:"background,omitempty"`
	Stdout     *string `json:"stdout,omitempty"`
	Stderr     *string `json:"stderr,omitempty"`
	Truncated  *bool   `json:"truncated,omitempty"`
	OutputKept *bool   `json:"output_kept,omitempty"`
}

// output returns the entry's state and output: read_output's answer.
func (e *entry) output() view {
	e.mu.Lock()
	v := view{ID: e.id, Command: e.command, Status: e.status, ExitCode: e.exitCode, DurationMS: e.duration}
	out, errs, kept := e.stdout, e.stderr, e.kept
	e.mu.Unlock()
	so, t1 := out.snapshot()
	se, t2 := errs.snapshot()
	t := t1 || t2
	v.Stdout, v.Stderr, v.Truncated, v.OutputKept = &so, &se, &t, &kept
	return v
}

// summary returns the entry without output: a history line.
func (e *entry) summary() view {
	e.mu.Lock()
	defer e.mu.Unlock()
	at := e.started.UTC().Format(time.RFC3339Nano)
	bg := e.background
	return view{ID: e.id, Command: shorten(e.command, MaxListedCommandBytes), Status: e.status, ExitCode: e.exitCode, DurationMS: e.duration, StartedAt: &at, Background: &bg}
}

// history is the last MaxHistory commands, oldest first, and the output of the latest of them
// up to MaxRetainedOutputBytes in all. It is safe for concurrent use.
type history struct {
	mu      sync.Mutex
	last    int64 // the last id given
	entries []*entry
}

// add gives e the next id and appends it, forgetting the oldest entry beyond MaxHistory.
func (h *history) add(e *entry) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last++
	e.id = h.last
	h.entries = append(h.entries, e)
	if len(h.entries) > MaxHistory {
		h.entries[0] = nil
		h.entries = h.entries[1:]
	}
	return e.id
}

// finish records how e ended, then drops the output of the oldest finished entries while the
// output kept in all is above MaxRetainedOutputBytes.
func (h *history) finish(e *entry, status string, code *int, d time.Duration) {
	ms := d.Milliseconds()
	e.mu.Lock()
	e.status, e.exitCode, e.duration = status, code, &ms
	e.mu.Unlock()

	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for _, x := range h.entries {
		x.mu.Lock()
		if x.status != statusRunning {
			total += x.stdout.size() + x.stderr.size()
		}
		x.mu.Unlock()
	}
	for _, x := range h.entries {
		if total <= MaxRetainedOutputBytes {
			break
		}
		x.mu.Lock()
		if x.status != statusRunning && x.kept {
			total -= x.stdout.size() + x.stderr.size()
			x.stdout, x.stderr, x.kept = nil, nil, false
		}
		x.mu.Unlock()
	}
}

// get returns the entry id of client, or client's latest entry when id is 0; nil when there
// is none (or it has left the history).
func (h *history) get(client string, id int64) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.entries) - 1; i >= 0; i-- {
		e := h.entries[i]
		if e.client == client && (id == 0 || e.id == id) {
			return e
		}
	}
	return nil
}

// list returns client's entries, newest first, from offset, at most count, and how many
// client has in all.
func (h *history) list(client string, count, offset int) ([]*entry, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*entry
	total := 0
	for i := len(h.entries) - 1; i >= 0; i-- {
		e := h.entries[i]
		if e.client != client {
			continue
		}
		if total >= offset && len(out) < count {
			out = append(out, e)
		}
		total++
	}
	return out, total
}

// shorten returns s cut to at most n bytes at a rune boundary, with an ellipsis when cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
