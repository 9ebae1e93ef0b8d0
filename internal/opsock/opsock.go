// Package opsock is the running gateway's operator socket: the changes of package operator
// (registering an app, adding, removing and accepting tool servers, adding and changing
// clients, revoking tokens, answering consent requests) asked of the gateway that serves a
// data folder, so that its caches and its children see them at once, rather than at their
// next look at the store.
//
// The socket is DATA/operator.sock, a unix socket of mode 0600 in the data folder (0700): only
// the folder's owner reaches it, who can read and write the store anyway, and the server
// checks the peer's uid again (SO_PEERCRED) against its own. The requests are JSON over HTTP;
// an error carries its kind, so that the client's error matches the same sentinel errors
// (store.ErrNotFound, toolserver.ErrNothingToAccept, ...) as the change made directly.
package opsock

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// File is the operator socket's name in the data folder.
const File = "operator.sock"

// Path is the operator socket of the data folder dir.
func Path(dir string) string { return filepath.Join(dir, File) }

// MaxRequestBytes bounds a request: a manifest (manifest.MaxManifestBytes) base64-encoded,
// with room for the rest.
const MaxRequestBytes = 2*manifest.MaxManifestBytes + 64<<10

// The paths of the changes.
const (
	pathRegisterApp  = "/v1/operator/apps/register"
	pathAddClient    = "/v1/operator/clients/add"
	pathChangeClient = "/v1/operator/clients/change"
	pathAddTool      = "/v1/operator/toolservers/add"
	pathRemoveTool   = "/v1/operator/toolservers/remove"
	pathAcceptTools  = "/v1/operator/toolservers/accept"
	pathRevoke       = "/v1/operator/tokens/revoke"
	pathAnswer       = "/v1/operator/consents/answer"
)

// actor is who asks, as operator.Actor.
type actor struct {
	ID    string `json:"id"`
	Who   string `json:"who"`
	Where string `json:"where"`
}

// maxActorBytes bounds each of an actor's fields: they are audit fields.
const maxActorBytes = 128

func (a actor) check() error {
	for name, v := range map[string]string{"by.id": a.ID, "by.who": a.Who, "by.where": a.Where} {
		if v == "" || len(v) > maxActorBytes {
			return fmt.Errorf("%s: must be 1 to %d bytes", name, maxActorBytes)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return fmt.Errorf("%s: must be printable ASCII", name)
			}
		}
	}
	return nil
}

type registerApp struct {
	By       actor              `json:"by"`
	Manifest []byte             `json:"manifest"` // the manifest's bytes as they are (base64 in JSON)
	Alias    string             `json:"alias"`
	Program  *providers.Program `json:"program,omitempty"` // for an app that runs out of process
}

// app is a registered app as the socket returns it: registry.App without its document.
type app struct {
	ID     manifest.AppID  `json:"id"` // parsed when the client decodes the answer
	Alias  string          `json:"alias"`
	Tier   manifest.Tier   `json:"tier"`
	Reason manifest.Reason `json:"reason"`
	Detail string          `json:"detail"`
}

type addClient struct {
	By           actor  `json:"by"`
	Name         string `json:"name"`
	Trust        string `json:"trust"`
	NeverAsk     bool   `json:"never_ask"`
	RequireToken bool   `json:"require_token"`
	UnixUID      *int   `json:"unix_uid,omitempty"`
	// Assistant is left out when empty, so that a gateway of the release before, which
	// knows no such member, still adds the person's own agents.
	Assistant string `json:"assistant,omitempty"`
}

type addedClient struct {
	Key    string       `json:"key"`
	Client store.Client `json:"client"`
}

type changeClient struct {
	By     actor                 `json:"by"`
	Ref    string                `json:"ref"`
	Action operator.ClientAction `json:"action"`
}

type addTool struct {
	By     actor             `json:"by"`
	Config toolserver.Config `json:"config"`
}

type removeTool struct {
	By   actor  `json:"by"`
	Name string `json:"name"`
}

type acceptTools struct {
	By     actor    `json:"by"`
	Name   string   `json:"name"`
	Tools  []string `json:"tools"`
	DryRun bool     `json:"dry_run"`
}

// reported is a tool-server change's answer: its report, and its error, if any, beside it
// (a failed accept still shows how the tools differ).
type reported struct {
	Report toolserver.Report `json:"report"`
	Error  *wireError        `json:"error,omitempty"`
}

type revoke struct {
	By actor  `json:"by"`
	ID string `json:"id"`
}

type answer struct {
	By       actor         `json:"by"`
	ID       string        `json:"id"`
	Verb     operator.Verb `json:"verb"`
	Remember bool          `json:"remember"`
}

// wireError is an error as the socket carries it: what it says and its kind, the name of the
// sentinel it matches ("" for none).
type wireError struct {
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"`
}

// kinds are the sentinel errors an answer names, so that the client's errors match what the
// change made directly returns.
var kinds = map[string]error{
	"not_found":       store.ErrNotFound,
	"exists":          store.ErrExists,
	"not_pending":     consent.ErrNotPending,
	"invalid_request": consent.ErrInvalidRequest,
	"nothing":         toolserver.ErrNothingToAccept,
	"not_tool_server": toolserver.ErrNotToolServer,
	"taken":           toolserver.ErrTaken,
	"changed_again":   toolserver.ErrChangedAgain,
	"not_recorded":    operator.ErrNotRecorded,
	"unavailable":     operator.ErrUnavailable,
	"invalid_client":  operator.ErrInvalidClient,
	"no_valid_tool":   operator.ErrNoValidTool,
	"not_installed":   plugin.ErrNotInstalled,
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Message: err.Error()}
	for k, e := range kinds {
		if errors.Is(err, e) {
			w.Kind = k
			break
		}
	}
	return w
}

// remoteError is an error the gateway answered: its message as the gateway said it, matching
// (errors.Is) the sentinel its kind names.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	return &remoteError{msg: w.Message, kind: kinds[w.Kind]}
}

// Changes are the changes the socket carries: an operator.Service makes them on a store
// directly, a Client asks the running gateway to.
type Changes interface {
	RegisterApp(ctx context.Context, by operator.Actor, raw []byte, alias string) (registry.App, error)
	RegisterProvider(ctx context.Context, by operator.Actor, raw []byte, alias string, prog providers.Program) (registry.App, error)
	AddClient(ctx context.Context, by operator.Actor, n operator.NewClient) (string, store.Client, error)
	ChangeClient(ctx context.Context, by operator.Actor, ref string, action operator.ClientAction) (store.Client, error)
	AddToolServer(ctx context.Context, by operator.Actor, c toolserver.Config) (toolserver.Report, error)
	RemoveToolServer(ctx context.Context, by operator.Actor, name string) error
	AcceptTools(ctx context.Context, by operator.Actor, name string, tools []string, dryRun bool) (toolserver.Report, error)
	Revoke(ctx context.Context, by operator.Actor, id string) error
	Answer(ctx context.Context, by operator.Actor, id string, verb operator.Verb, remember bool) error
}

var (
	_ Changes = (*operator.Service)(nil)
	_ Changes = (*Client)(nil)
)
