package web

import "time"

// Every size, count and time limit of the package is here, each with its reason.

const (
	// LoginTTL is how long a login link works: long enough to copy it from the terminal
	// into a browser, short enough that a link left in a scrollback is soon worthless.
	LoginTTL = 10 * time.Minute

	// SessionIdle is how long a session lives without a request: a working day, so that a
	// page left open keeps working, and a forgotten browser does not stay signed in.
	SessionIdle = 12 * time.Hour

	// MaxSessions bounds the sessions held in memory: one person has few browsers. When
	// full, the least recently used session is dropped (its page asks for a new link).
	MaxSessions = 32

	// MaxLoginLinks bounds the unused login links held in memory; when full, the oldest is
	// dropped.
	MaxLoginLinks = 16

	// MaxListed is the most pending requests (newest first) or live tokens one page lists:
	// more than a person can read, and a bound on the page's size if an agent floods the
	// queue or derives token after token.
	MaxListed = 200

	// MaxFormBytes bounds the body of a POST: a CSRF token and a checkbox.
	MaxFormBytes = 4 << 10

	// CommitGrace is how long after its delayed-commit window a commit request expires
	// (consent's commitGrace): the window's end, shown as a countdown, is Expires minus it.
	// TestCommitGraceMatchesConsent keeps the two in step.
	CommitGrace = 30 * time.Second

	// ActivityPage is how many audit records one activity page shows, newest first.
	ActivityPage = 50

	// MaxActivityScan bounds the records one activity page reads when a filter matches few:
	// the page then links to the older records from where it stopped, so that a page of a
	// long log answers quickly whatever the filter.
	MaxActivityScan = 20000

	// activityChunk is how many records the activity page reads from the store at once.
	activityChunk = 500

	// maxProblemsShown is the most audit verification problems the page lists; `capgate
	// audit verify` lists them all.
	maxProblemsShown = 20

	// maxDepthShown bounds the indentation of derived tokens, so that a deep chain stays
	// legible on a narrow window.
	maxDepthShown = 4

	// tokenBytes is the size of login links, session ids and CSRF tokens: 256 random bits.
	tokenBytes = 32

	// maxIDBytes bounds an id taken from a path or a form (a token's, a call's, a plugin's
	// app id) before it is looked up or written to the audit log: far above any real one.
	maxIDBytes = 256

	// maxDescriptionShown is the most bytes of a tool's own description the apps page
	// shows; the rest is cut, marked with "…".
	maxDescriptionShown = 600

	// maxDiffLinesShown is the most lines of a tool's difference the apps page shows (the
	// pin request holds at most toolserver.MaxDiffLines and a line saying how many more).
	maxDiffLinesShown = 80
)
