package web

import (
	"context"
	"errors"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/operator"
)

// Recorder writes an audit record and returns once it is durable, or an error when it could
// not be written; *audit.Writer is one. It must be safe for concurrent use.
type Recorder interface {
	Append(ctx context.Context, rec audit.Record) (int64, error)
}

var _ Recorder = (*audit.Writer)(nil)

// person is the client id the audit log names for a change the person made on this page.
const person = answeredBy

// the person, as the audit log's explanations name them, on a page of this surface.
var (
	onThePage     = operator.Actor{ID: person, Who: "the person", Where: "on the approval page"}
	onMandatePage = operator.Actor{ID: person, Who: "the person", Where: "on the mandates page"}
)

// decided records that the person decided rec (a decision of kind decision, allowed, made by
// person), before the change is made. It fails when there is no Recorder or the record could
// not be written: then the change is not made.
func (s *Server) decided(ctx context.Context, rec audit.Record) error {
	if s.o.Audit == nil {
		return errNoAudit
	}
	rec.ClientID, rec.Kind, rec.Decision = person, audit.KindDecision, audit.DecisionAllow
	_, err := s.o.Audit.Append(ctx, rec)
	return err
}

// done records what came of a change recorded by decided: result "success", or "error" with
// code. A failure to write it is only logged: the change was made.
func (s *Server) done(ctx context.Context, rec audit.Record, code string) {
	if s.o.Audit == nil {
		return
	}
	rec.ClientID, rec.Kind, rec.Decision, rec.Result, rec.Code = person, audit.KindOutcome, audit.DecisionAllow, "success", code
	if code != "" {
		rec.Result = "error"
	}
	if _, err := s.o.Audit.Append(ctx, rec); err != nil {
		s.o.Logger.Warn("web: the outcome of the person's change could not be recorded", "action", rec.Action, "err", err)
	}
}

// errNoAudit is a change refused because the page has no Recorder.
var errNoAudit = errors.New("web: no audit recorder")
