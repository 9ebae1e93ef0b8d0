package consent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Answerers capgate itself records; a person's answer never starts with systemPrefix.
const (
	systemPrefix = "capgate:"
	// ByNoSurface answers every request when there is no approval surface.
	ByNoSurface = "capgate: no approval surface"
	// ByWindowElapsed answers a commit request whose window ended uncancelled.
	ByWindowElapsed = "capgate: window elapsed"
	// ByCallerGone cancels a commit request whose caller's context ended in the window.
	ByCallerGone = "capgate: caller gone"
)

// Options configure a Service. The zero value (and nil) is the safe one: no approval
// surface, so every request is denied at once.
type Options struct {
	// TTL is how long a request waits for an answer; unanswered it expires, which counts
	// as denied. Zero or negative means DefaultTTL.
	TTL time.Duration
	// Surface says an approval surface exists (the CLI `capgate approvals`, the web page).
	// Without one every request is recorded denied by ByNoSurface at once: fail closed.
	Surface bool
	// Now is the clock; nil means time.Now. Timers (Poll, the commit window) run in real
	// time; Now decides Created, Expires and the time of answers.
	Now func() time.Time
	// Poll is how often Wait and Commit re-read the store, for answers given by another
	// process or replica. Zero or negative means DefaultPoll; below MinPoll means MinPoll.
	Poll time.Duration
	// NewID makes request ids; nil means "req_" and 24 hex digits from crypto/rand. Ids it
	// makes must pass ValidID.
	NewID func() string
}

// Store is what a Service needs of the store: the consent requests and the mandates.
type Store interface {
	store.Consents
	store.Mandates
}

// Service asks the person and records the answers. It is safe for concurrent use, and
// several Services (in several processes) may share one store.
type Service struct {
	st      Store
	ttl     time.Duration
	poll    time.Duration
	surface bool
	now     func() time.Time
	newID   func() string

	mu sync.Mutex
	// changed is closed, and replaced, whenever this Service changes a request, to wake
	// its waiters. Every waiter wakes and re-reads its own request: pending questions to one
	// person are few, and a re-read is one primary-key lookup.
	changed chan struct{}
}

// New returns a Service on st. opts may be nil. New panics if st is nil.
func New(st Store, opts *Options) *Service {
	if st == nil {
		panic("consent: New with a nil store")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Service{st: st, ttl: o.TTL, poll: o.Poll, surface: o.Surface, now: o.Now, newID: o.NewID,
		changed: make(chan struct{})}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	s.poll = max(s.poll, MinPoll)
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = newID
	}
	return s
}

// Ask records a request of kind KindToken or KindCall and returns its record: pending until
// the person answers or it expires after TTL, or, without an approval surface, already
// denied by ByNoSurface. A Request that breaks a rule is ErrInvalidRequest and nothing is
// recorded.
func (s *Service) Ask(ctx context.Context, r Request) (store.Consent, error) {
	if r.Kind == KindCommit {
		return store.Consent{}, fmt.Errorf("consent: ask: %w: kind commit is created by Commit", ErrInvalidRequest)
	}
	if r.Kind != KindToken && r.Kind != KindCall {
		return store.Consent{}, fmt.Errorf("consent: ask: %w: kind must be token or call (a trigger is proposed with Propose)", ErrInvalidRequest)
	}
	return s.put(ctx, "ask", r, s.ttl)
}

// Propose records a trigger request (KindTrigger) and returns its record: pending until the
// person answers or it expires after TriggerTTL. Nothing waits on it: the agent that
// proposed the trigger goes on, and the trigger fires only once it is approved.
func (s *Service) Propose(ctx context.Context, r Request) (store.Consent, error) {
	if r.Kind != KindTrigger {
		return store.Consent{}, fmt.Errorf("consent: propose: %w: kind must be trigger", ErrInvalidRequest)
	}
	return s.put(ctx, "propose", r, TriggerTTL)
}

// put validates and records r, pending for ttl (or denied at once without a surface).
func (s *Service) put(ctx context.Context, op string, r Request, ttl time.Duration) (store.Consent, error) {
	if err := r.validate(r.Kind); err != nil {
		return store.Consent{}, fmt.Errorf("consent: %s: %w", op, err)
	}
	r = r.normalize()
	payload, err := json.Marshal(r)
	if err != nil {
		return store.Consent{}, fmt.Errorf("consent: %s: payload: %w", op, err)
	}
	if len(payload) > MaxPayloadBytes {
		return store.Consent{}, fmt.Errorf("consent: %s: %w: payload must be at most MaxPayloadBytes", op, ErrInvalidRequest)
	}
	id := s.newID()
	if !ValidID(id) {
		return store.Consent{}, fmt.Errorf("consent: %s: Options.NewID: %w", op, ErrInvalidID)
	}
	now := s.now()
	c := store.Consent{
		ID:       id,
		ClientID: r.ClientID,
		Kind:     r.Kind,
		Payload:  payload,
		State:    store.ConsentPending,
		Created:  now,
		Expires:  now.Add(ttl),
	}
	if !s.surface {
		c.State, c.Answered, c.AnsweredBy = store.ConsentDenied, now, ByNoSurface
	}
	if err := s.st.PutConsent(ctx, c); err != nil {
		return store.Consent{}, fmt.Errorf("consent: %s: %w", op, err)
	}
	return c, nil
}

// Get returns the request's record and the Request in its payload. A missing request is
// store.ErrNotFound (wrapped).
func (s *Service) Get(ctx context.Context, id string) (store.Consent, Request, error) {
	if err := checkID("get", id); err != nil {
		return store.Consent{}, Request{}, err
	}
	c, r, err := s.load(ctx, id)
	if err != nil {
		return store.Consent{}, Request{}, fmt.Errorf("consent: get %s: %w", id, err)
	}
	return c, r, nil
}

// load reads the request's record and decodes its payload.
func (s *Service) load(ctx context.Context, id string) (store.Consent, Request, error) {
	c, err := s.st.GetConsent(ctx, id)
	if err != nil {
		return store.Consent{}, Request{}, err
	}
	var r Request
	if err := json.Unmarshal(c.Payload, &r); err != nil {
		return store.Consent{}, Request{}, fmt.Errorf("payload: %w", err)
	}
	return c, r, nil
}

// List returns the requests in state (one of the store.Consent* states, or "" for all),
// ordered by Created.
func (s *Service) List(ctx context.Context, state string) ([]store.Consent, error) {
	switch state {
	case "", store.ConsentPending, store.ConsentApproved, store.ConsentDenied, store.ConsentExpired,
		store.ConsentCancelled:
	default:
		return nil, fmt.Errorf("consent: list: %w: state must be a consent state", ErrInvalidRequest)
	}
	cs, err := s.st.ListConsents(ctx, state)
	if err != nil {
		return nil, fmt.Errorf("consent: list: %w", err)
	}
	return cs, nil
}

// Sweep marks every pending request past its expiry as expired and returns their ids,
// ordered by Created. The server runs it periodically; Wait also sweeps when the request it
// waits for is past its expiry.
func (s *Service) Sweep(ctx context.Context) ([]string, error) {
	ids, err := s.st.ExpireConsents(ctx, s.now())
	if err != nil {
		return nil, fmt.Errorf("consent: sweep: %w", err)
	}
	if len(ids) > 0 {
		s.notify()
	}
	return ids, nil
}

// Approve answers the pending request approved by by (the person, as the surface names
// them). With remember it also records the person's agreement as the mandate for the
// request's permission: act_if_agreed, naming this request, its wording and the time; a
// request without Wording or Permission cannot be remembered (ErrCannotRemember, nothing
// answered). The mandate is written only once the approval has won.
//
// A request no longer pending, or past its expiry, is ErrNotPending. A commit request is
// not approved by hand: its window's end approves it.
func (s *Service) Approve(ctx context.Context, id, by string, remember bool) error {
	if err := checkAnswer("approve", id, by); err != nil {
		return err
	}
	c, r, err := s.load(ctx, id)
	if err != nil {
		return fmt.Errorf("consent: approve %s: %w", id, err)
	}
	if c.Kind == KindCommit {
		return fmt.Errorf("consent: approve %s: %w: a commit request goes ahead when its window ends; it can only be cancelled",
			id, ErrInvalidRequest)
	}
	if remember && (r.Wording == "" || r.Permission == "") {
		return fmt.Errorf("consent: approve %s: %w", id, ErrCannotRemember)
	}
	at := s.now()
	if err := s.answer(ctx, "approve", id, store.ConsentApproved, by, r.Wording, at); err != nil {
		return err
	}
	if !remember {
		return nil
	}
	m := store.Mandate{
		Permission: r.Permission,
		Autonomy:   AutonomyActIfAgreed,
		AgreedID:   id,
		Wording:    r.Wording,
		AgreedAt:   at,
		Updated:    at,
	}
	if err := s.st.PutMandate(ctx, m); err != nil {
		return fmt.Errorf("consent: approve %s: approved, but the agreement was not remembered: %w", id, err)
	}
	return nil
}

// Deny answers the pending request denied by by. A request no longer pending, or past its
// expiry, is ErrNotPending.
func (s *Service) Deny(ctx context.Context, id, by string) error {
	if err := checkAnswer("deny", id, by); err != nil {
		return err
	}
	return s.answer(ctx, "deny", id, store.ConsentDenied, by, "", s.now())
}

// Cancel answers the pending request cancelled by by: the person withdraws it, or stops a
// delayed commit within its window. A request no longer pending, or past its expiry, is
// ErrNotPending.
func (s *Service) Cancel(ctx context.Context, id, by string) error {
	if err := checkAnswer("cancel", id, by); err != nil {
		return err
	}
	return s.answer(ctx, "cancel", id, store.ConsentCancelled, by, "", s.now())
}

// answer moves the request to state by compare-and-set in the store and wakes the waiters.
func (s *Service) answer(ctx context.Context, op, id, state, by, wording string, at time.Time) error {
	err := s.st.AnswerConsent(ctx, id, state, by, wording, at)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("consent: %s %s: %w", op, id, ErrNotPending)
	}
	if err != nil {
		return fmt.Errorf("consent: %s %s: %w", op, id, err)
	}
	s.notify()
	return nil
}

// signal returns the channel the next change made through s closes. Take it before reading
// the store, so that a change between the read and the wait is not missed.
func (s *Service) signal() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Changed tells s that a request changed elsewhere (another process or replica answered,
// cancelled or expired it), so that its waiters re-read the store now instead of at their
// next poll. A store that notifies (store.Watcher) calls it through the gateway.
func (s *Service) Changed() { s.notify() }

// notify wakes everyone waiting on signal.
func (s *Service) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}
