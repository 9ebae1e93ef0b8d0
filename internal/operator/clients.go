package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/store"
)

// ClientAction is a change to a client: ClientDisable, ClientEnable or ClientRemove.
type ClientAction string

// The changes to a client. Its audit action is "client." and the change's name.
const (
	// ClientDisable refuses the client's key and uid, and its tokens at use, until it is
	// enabled again: on every replica at its very next call (the broker checks the client at
	// use, and the store refuses a disabled client's tokens).
	ClientDisable ClientAction = "disable"
	// ClientEnable undoes ClientDisable: the key, the uid and the tokens work again.
	ClientEnable ClientAction = "enable"
	// ClientRemove removes the client and revokes its tokens and every token derived from
	// them, for good (store.Clients.DeleteClient).
	ClientRemove ClientAction = "remove"
)

// ParseClientAction reads a change's name.
func ParseClientAction(s string) (ClientAction, bool) {
	switch a := ClientAction(s); a {
	case ClientDisable, ClientEnable, ClientRemove:
		return a, true
	}
	return "", false
}

// narrows reports whether the change only takes away what the client may do.
func (a ClientAction) narrows() bool { return a != ClientEnable }

// Actor is who makes a change and from where, as the audit log says it.
type Actor struct {
	ID    string // the records' client_id, e.g. "cli:alice" or "person (approval page)"
	Who   string // in words: "the operator", "the person"
	Where string // in words: "from the command line", "on the approval page"
}

// FindClient finds a client by its id, else by its name: ErrNotFound (wrapped) when neither
// names one. An id is tried first, and ids start "cl_", so a name never hides another
// client's id.
func FindClient(ctx context.Context, st store.Clients, ref string) (store.Client, error) {
	if ref == "" || len(ref) > audit.MaxFieldBytes {
		return store.Client{}, fmt.Errorf("operator: client: %w", store.ErrNotFound)
	}
	c, err := st.GetClient(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		c, err = st.ClientByName(ctx, ref)
	}
	return c, err
}

// ChangeClient makes action on the client with the id, by by, recorded in log (Change): the
// decision record before names the action and the client's id, the outcome after says what
// came of it. Disabling and removing are made even when they cannot be recorded (warn is
// told); enabling is not. A client that does not exist is store.ErrNotFound, recorded as
// INVALID_REQUEST. now is the time a removal revokes the client's tokens at.
func ChangeClient(ctx context.Context, st store.Clients, log Recorder, by Actor, id string, action ClientAction,
	now time.Time, warn func(error)) error {
	var what, after string
	switch action {
	case ClientDisable:
		what, after = "disabled", ": its key, its uid and its tokens are refused until it is enabled"
	case ClientEnable:
		what, after = "enabled", ": its key, its uid and its live tokens work again"
	case ClientRemove:
		what, after = "removed", ", revoking its tokens and every token derived from them"
	default:
		return fmt.Errorf("operator: unknown client change %q", action)
	}
	if len(id) > audit.MaxFieldBytes {
		return fmt.Errorf("operator: client: %w", store.ErrNotFound)
	}
	rec := audit.Record{Action: "client." + string(action), Result: string(action) + " requested",
		Explanation: fmt.Sprintf("%s %s the client %s %s%s", by.Who, what, id, by.Where, after)}
	return Change(ctx, log, by.ID, rec, action.narrows(), func(*audit.Record) error {
		switch action {
		case ClientRemove:
			return st.DeleteClient(ctx, id, now)
		default:
			return st.SetClientDisabled(ctx, id, action == ClientDisable)
		}
	}, CodeOf(CodeInvalidRequest), warn)
}

// MaxClientNameBytes bounds a client's name: the person reads it on every request the client
// makes, so it is a short label, not a message.
const MaxClientNameBytes = 64

// ErrClientName is the problem of a client name outside its grammar.
var ErrClientName = fmt.Errorf("a client name is 1 to %d ASCII letters, digits, '.', '_', '-' and inner spaces, starting with a letter or digit", MaxClientNameBytes)

// ValidClientName checks a new client's name: 1 to MaxClientNameBytes bytes of ASCII letters,
// digits, '.', '_', '-' and spaces, starting with a letter or digit and not ending with a
// space. ASCII only, since the name stands for the agent on the approval page: a look-alike
// of another client's name must not be possible.
func ValidClientName(name string) error {
	if name == "" || len(name) > MaxClientNameBytes || name[len(name)-1] == ' ' {
		return ErrClientName
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-' && c != ' ') {
			return ErrClientName
		}
	}
	return nil
}
