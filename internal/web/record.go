package web

import (
	"context"

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
