package consent

import "time"

// Every size, count and time limit of the package is here, each with its reason.

const (
	// DefaultTTL is how long a request waits for an answer when Options.TTL is not set. Long
	// enough for a person to notice the prompt and read it; short enough that an agent is
	// not left hanging, and that an old question is not approved out of its context.
	DefaultTTL = 5 * time.Minute

	// TriggerTTL is how long a proposed trigger waits for the person's answer. Nothing is
	// held open while it waits (the agent goes on), so it can wait for the person to come
	// back to the page; a day keeps an old proposal from being approved out of its context.
	TriggerTTL = 24 * time.Hour

	// DefaultPoll is how often Wait and Commit re-read the store when Options.Poll is not
	// set, to see answers given by another process or replica. A quarter of a second feels
	// immediate to a person and costs one primary-key read per waiter.
	DefaultPoll = 250 * time.Millisecond

	// MinPoll is the shortest Poll honoured; a shorter one is raised to it. Below it the
	// waiters would spend the store's time rather than save the person's.
	MinPoll = 5 * time.Millisecond

	// DefaultCommitWindow is the delayed-commit window Commit waits out when it is given
	// none: a few seconds, enough to reach for "cancel" after seeing the prompt.
	DefaultCommitWindow = 5 * time.Second

	// MaxCommitWindow is the longest delayed-commit window. The window holds the agent's
	// call open; a longer hold is a question, and belongs in a call request.
	MaxCommitWindow = 10 * time.Minute

	// commitGrace is how long after its window a commit request may still be marked
	// approved. It covers a slow store write at the window's end; a commit request still
	// pending after it (its process died in the window) expires, and the call never runs.
	commitGrace = 30 * time.Second

	// abandonTimeout bounds the write that cancels a commit request whose caller went away:
	// the caller's context is already done, and the write must not hang on a stuck store.
	abandonTimeout = 5 * time.Second

	// MaxPayloadBytes is the largest payload (the Request as JSON) Ask and Commit record.
	// It is read by a person: params larger than this belong in a summary, not a prompt.
	MaxPayloadBytes = 64 << 10

	// MaxFieldBytes is the longest client id, client name, capability id, permission, risk,
	// side effects, reversibility, remedy, audit tag, grant and answerer ("by"): names and
	// short labels.
	MaxFieldBytes = 256

	// MaxTextBytes is the longest summary, reason and wording: a few sentences a person
	// reads before deciding.
	MaxTextBytes = 4096

	// MaxGrants is the most grants one token request lists, as many as a token may hold
	// (token.MaxGrants).
	MaxGrants = 64

	// MaxListEntries is the most entries of each constraint list a token request shows
	// (TokenTerms.AllowedPaths, ...), as many as a token may hold (token.MaxListEntries).
	MaxListEntries = 64

	// MaxDifferenceLines is the most lines of a tool's difference (Request.Difference): the
	// tool server's 60 and its "and N more" line, with room to spare.
	MaxDifferenceLines = 100

	// MaxLookalikes is the most texts Details flags for look-alike characters: enough to
	// warn, and a hostile request cannot fill the page with warnings.
	MaxLookalikes = 20

	// idHexLen is the number of hex digits after "req_" in a request id: 96 random bits,
	// unguessable, so that an id seen in one place does not let anyone guess another.
	idHexLen = 24
)
