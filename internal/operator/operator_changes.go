package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// Registrar registers an app from its manifest: Tier 1 when its signature verifies against
// a trusted key, else Tier 2 (*registry.Registry).
type Registrar interface {
	Register(ctx context.Context, raw []byte, alias string) (registry.App, error)
}

var _ Registrar = (*registry.Registry)(nil)

// RegisterApp registers the app whose manifest JSON is raw, by by, under alias ("" for the
// app id's last label). A registered app is callable: it is not registered unrecorded. A
// manifest that does not name a valid app id is refused by the registry as it is, with
// nothing recorded, since nothing changed and there is no app to name.
func (s *Service) RegisterApp(ctx context.Context, by Actor, raw []byte, alias string) (registry.App, error) {
	if s.Registry == nil {
		return registry.App{}, ErrUnavailable
	}
	id, ok := appIDOf(raw)
	if !ok {
		return s.Registry.Register(ctx, raw, alias)
	}
	rec := audit.Record{Action: ActionAppRegister, App: id, Result: "register requested",
		Explanation: fmt.Sprintf("%s registered the app from its manifest %s: Tier 1 when its signature verifies, else Tier 2", by.Who, by.Where)}
	var app registry.App
	err := Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error {
		var err error
		app, err = s.Registry.Register(ctx, raw, alias)
		return err
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	return app, err
}

// RegisterProvider registers the app whose manifest JSON is raw, by by, as RegisterApp does,
// to run out of process as prog: the gateway starts prog, holds it to the manifest and
// calls it. The program is recorded with the app, in the same change.
func (s *Service) RegisterProvider(ctx context.Context, by Actor, raw []byte, alias string, prog providers.Program) (registry.App, error) {
	if s.Registry == nil || s.Programs == nil {
		return registry.App{}, ErrUnavailable
	}
	if err := prog.Check(); err != nil {
		return registry.App{}, fmt.Errorf("%w: program: %w", consent.ErrInvalidRequest, err)
	}
	id, ok := appIDOf(raw)
	if !ok {
		return s.Registry.Register(ctx, raw, alias)
	}
	rec := audit.Record{Action: ActionAppRegister, App: id, Result: "register requested",
		Explanation: fmt.Sprintf("%s registered the app from its manifest %s, to run out of process as the program with digest %s: Tier 1 when its signature verifies, else Tier 2",
			by.Who, by.Where, prog.Digest)}
	var app registry.App
	err := Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error {
		var err error
		if app, err = s.Registry.Register(ctx, raw, alias); err != nil {
			return err
		}
		return providers.SaveProgram(ctx, s.Programs, app.ID.String(), prog)
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	return app, err
}

// appIDOf is the app id a manifest's JSON names, when it parses and the id is valid.
func appIDOf(raw []byte) (string, bool) {
	doc, err := manifest.Parse(raw)
	if err != nil || doc.Manifest() == nil {
		return "", false
	}
	id := string(doc.Manifest().AppID)
	if _, err := manifest.ParseAppID(id); err != nil {
		return "", false
	}
	return id, true
}

// NewClient is a client to add: its name (ValidClientName), its trust level (public, user or
// privileged), and how it is held.
type NewClient struct {
	Name         string
	Trust        string
	NeverAsk     bool // refuse what would need the person instead of asking
	RequireToken bool // every call needs a token, even a low-risk read
	UnixUID      *int // a peer of the unix socket with this uid is the client
	// Assistant is "" for an agent of the person's, else the kind of other assistant the
	// client is: "keeps" (its provider stores or trains on data, or says nothing of it) or
	// "private" (it does neither); see policy.AssistantRefusal.
	Assistant string
}

// MaxUnixUID is the largest unix user id a client can be bound to: (uid_t)-1 is no user.
const MaxUnixUID = 1<<32 - 2

// ErrInvalidClient wraps what is wrong with a NewClient.
var ErrInvalidClient = errors.New("invalid client")

// Check says what is wrong with n, naming the field and the rule.
func (n NewClient) Check() error {
	if err := ValidClientName(n.Name); err != nil {
		return fmt.Errorf("%w: name: %w", ErrInvalidClient, err)
	}
	switch n.Trust {
	case "public", "user", "privileged":
	default:
		return fmt.Errorf("%w: trust: must be public, user or privileged", ErrInvalidClient)
	}
	if n.UnixUID != nil && (*n.UnixUID < 0 || *n.UnixUID > MaxUnixUID) {
		return fmt.Errorf("%w: uid: must be a unix user id, 0 to %d", ErrInvalidClient, MaxUnixUID)
	}
	if n.Assistant != "" && !slices.Contains(policy.Assistants, policy.Assistant(n.Assistant)) {
		return fmt.Errorf("%w: assistant: must be keeps or private", ErrInvalidClient)
	}
	return nil
}

// AddClient adds the client n, by by, and returns its key (shown once: the store keeps only
// its hash) and the client as stored. A client may call: it is not added unrecorded. A name
// or uid another client holds is store.ErrExists.
func (s *Service) AddClient(ctx context.Context, by Actor, n NewClient) (key string, c store.Client, err error) {
	if s.Clients == nil {
		return "", store.Client{}, ErrUnavailable
	}
	if err := n.Check(); err != nil {
		return "", store.Client{}, err
	}
	key, hash, err := NewClientKey()
	if err != nil {
		return "", store.Client{}, err
	}
	id, err := NewClientID()
	if err != nil {
		return "", store.Client{}, err
	}
	c = store.Client{ID: id, Name: n.Name, KeyHash: hash, Trust: manifest.AuthLevel(n.Trust), NeverAsk: n.NeverAsk, Created: s.now(),
		UnixUID: n.UnixUID, RequireToken: n.RequireToken, Assistant: n.Assistant}
	var how []string
	switch policy.Assistant(n.Assistant) {
	case policy.AssistantKeeps:
		how = append(how, "another assistant whose provider may store or train on data")
	case policy.AssistantPrivate:
		how = append(how, "another assistant whose provider neither stores nor trains on data")
	}
	if n.NeverAsk {
		how = append(how, "never asking the person")
	}
	if n.RequireToken {
		how = append(how, "requiring a token for every call")
	}
	if n.UnixUID != nil {
		how = append(how, fmt.Sprintf("bound to the unix uid %d", *n.UnixUID))
	}
	rec := audit.Record{Action: ActionClientAdd, Result: "add requested",
		Explanation: fmt.Sprintf("%s added the client %s (trust %s%s) %s", by.Who, c.ID, n.Trust, prefixed(", ", how), by.Where)}
	err = Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error { return s.Clients.PutClient(ctx, c) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	if err != nil {
		return "", store.Client{}, err
	}
	return key, c, nil
}

func prefixed(sep string, parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return sep + strings.Join(parts, sep)
}

// ChangeClient makes action on the client ref (its id, else its name: FindClient), by by
// (ChangeClient, the function, records it). It returns the client as it was found.
func (s *Service) ChangeClient(ctx context.Context, by Actor, ref string, action ClientAction) (store.Client, error) {
	if s.Clients == nil {
		return store.Client{}, ErrUnavailable
	}
	if _, ok := ParseClientAction(string(action)); !ok {
		return store.Client{}, fmt.Errorf("%w: no client change %q", ErrInvalidClient, action)
	}
	c, err := FindClient(ctx, s.Clients, ref)
	if err != nil {
		return store.Client{}, err
	}
	return c, ChangeClient(ctx, s.Clients, s.Audit, by, c.ID, action, s.now(), s.warn("client."+string(action)))
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// toolServerApp is the app id of the tool server name, when it fits a record.
func toolServerApp(name string) (string, error) {
	if err := toolserver.CheckName(name); err != nil {
		return "", fmt.Errorf("%w: %w", toolserver.ErrNotToolServer, err)
	}
	return toolserver.AppPrefix + name, nil
}

// AddToolServer adds the MCP server c, by by: capgate connects to it once, lists its tools
// and pins every one whose schema compiles, registering its app. Its tools become callable:
// it is not added unrecorded.
func (s *Service) AddToolServer(ctx context.Context, by Actor, c toolserver.Config) (toolserver.Report, error) {
	if s.ToolServers == nil {
		return toolserver.Report{}, ErrUnavailable
	}
	if err := c.Validate(); err != nil {
		return toolserver.Report{}, err
	}
	rec := audit.Record{Action: ActionToolAdd, App: toolserver.AppPrefix + c.Name, Result: "add requested",
		Explanation: fmt.Sprintf("%s added the tool server %s: the tools it lists now are accepted and pinned", by.Who, by.Where)}
	var r toolserver.Report
	err := Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error {
		var err error
		r, err = toolserver.Add(ctx, s.ToolServers, c)
		return err
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	return r, err
}

// RemoveToolServer removes the tool server name, its app and its pins, by by. A removal only
// takes away: it is made even when it cannot be recorded.
func (s *Service) RemoveToolServer(ctx context.Context, by Actor, name string) error {
	if s.ToolServers == nil {
		return ErrUnavailable
	}
	app, err := toolServerApp(name)
	if err != nil {
		return err
	}
	rec := audit.Record{Action: ActionToolRemove, App: app, Result: "remove requested",
		Explanation: fmt.Sprintf("%s removed the tool server, its app and its pins %s", by.Who, by.Where)}
	return Change(ctx, s.Audit, by.ID, rec, true, func(*audit.Record) error { return toolserver.Remove(ctx, s.ToolServers, name) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// AcceptTools lists the tool server name's tools again and pins the changed and new ones
// named in tools (every one when tools is empty), by by. An accepted tool runs again: the
// acceptance is not made unrecorded. A dry run changes nothing and records nothing; its
// report says what would be accepted.
func (s *Service) AcceptTools(ctx context.Context, by Actor, name string, tools []string, dryRun bool) (toolserver.Report, error) {
	if s.ToolServers == nil {
		return toolserver.Report{}, ErrUnavailable
	}
	app, err := toolServerApp(name)
	if err != nil {
		return toolserver.Report{}, err
	}
	if dryRun {
		return toolserver.Accept(ctx, s.ToolServers, name, tools, true, by.ID)
	}
	rec := audit.Record{Action: ActionToolAccept, App: app, Result: "accept requested",
		Explanation: fmt.Sprintf("%s accepted the tool server's changed and new tools %s (%d named)", by.Who, by.Where, len(tools))}
	var r toolserver.Report
	err = Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error {
		var err error
		r, err = toolserver.Accept(ctx, s.ToolServers, name, tools, false, by.ID)
		return err
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	return r, err
}

// ErrNoValidTool is an accept that pinned nothing: the tool's definition does not make a
// valid capability (its schema does not compile, say).
var ErrNoValidTool = errors.New("operator: the tool's definition makes no valid capability")

// AcceptSeenTool pins the tool of the pin request pr of the tool server name with the
// definition the person saw (pr.Hash), by by, and nothing else (toolserver.AcceptSeen): a
// definition that changed again since is toolserver.ErrChangedAgain. The records name the
// tool's capability and its consent request.
func (s *Service) AcceptSeenTool(ctx context.Context, by Actor, name string, pr toolserver.PinRequest) (toolserver.Report, error) {
	if s.ToolServers == nil {
		return toolserver.Report{}, ErrUnavailable
	}
	rec, err := s.pinRecord(ctx, name, pr)
	if err != nil {
		return toolserver.Report{}, err
	}
	rec.Action, rec.Result = ActionToolAccept, "accept requested"
	rec.Explanation = fmt.Sprintf("%s accepted a tool's definition %s %s", by.Who, pr.Hash, by.Where)
	var r toolserver.Report
	err = Change(ctx, s.Audit, by.ID, rec, false, func(out *audit.Record) error {
		var err error
		r, err = toolserver.AcceptSeen(ctx, s.ToolServers, name, pr.Tool, pr.Hash, by.ID)
		if err == nil && len(r.Accepted) == 0 {
			return ErrNoValidTool
		}
		if err == nil && out.Method == "" {
			out.Method, out.Capability = r.Accepted[0].Action, "tool."+rec.App+"."+r.Accepted[0].Action
		}
		return err
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
	return r, err
}

// KeepToolStopped denies the pin request pr of the tool server name, by by: its tool stays
// stopped (a new one uncallable) and the request no longer waits. It only stops something: it
// is made even when it cannot be recorded. A request answered already is no error: the tool
// stays stopped all the same.
func (s *Service) KeepToolStopped(ctx context.Context, by Actor, name string, pr toolserver.PinRequest) error {
	if s.ToolServers == nil || s.Consent == nil {
		return ErrUnavailable
	}
	rec, err := s.pinRecord(ctx, name, pr)
	if err != nil {
		return err
	}
	rec.Action, rec.Result = ActionToolKeepStopped, "keep stopped"
	rec.Explanation = fmt.Sprintf("%s kept a changed or new tool stopped %s", by.Who, by.Where)
	return Change(ctx, s.Audit, by.ID, rec, true, func(*audit.Record) error {
		err := s.Consent.Deny(ctx, pr.ConsentID, by.ID)
		if errors.Is(err, consent.ErrNotPending) {
			return nil
		}
		return err
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// pinRecord is the record of a change to the pin request pr of the tool server name: its app,
// its consent request and, when the tool has a pin, its capability.
func (s *Service) pinRecord(ctx context.Context, name string, pr toolserver.PinRequest) (audit.Record, error) {
	app, err := toolServerApp(name)
	if err != nil {
		return audit.Record{}, err
	}
	if len(pr.ConsentID) > audit.MaxFieldBytes {
		return audit.Record{}, fmt.Errorf("operator: pin request: %w", store.ErrNotFound)
	}
	rec := audit.Record{App: app, ConsentID: pr.ConsentID}
	if pins, err := toolserver.LoadPins(ctx, s.ToolServers.Store, name); err == nil {
		if i := slices.IndexFunc(pins, func(p toolserver.Pin) bool { return p.Tool == pr.Tool }); i >= 0 {
			rec.Method, rec.Capability = pins[i].Action, "tool."+app+"."+pins[i].Action
		}
	}
	return rec, nil
}

// InstallPlugin installs (or, with opts.Upgrade, upgrades) the plugin package src under the
// lockfile, by by, who is also the lock's approver of a widening approved at once. A plugin
// runs: the install is not made unrecorded, unless the Service keeps no audit log at all
// (NoAuditLog). The outcome record names the app and what came of it; a refused package is
// recorded as CAPABILITY_DENIED and returned as an outcome, not an error.
func (s *Service) InstallPlugin(ctx context.Context, by Actor, src string, opts plugin.Options) (plugin.Outcome, error) {
	if s.Plugins == nil {
		return plugin.Outcome{}, ErrUnavailable
	}
	action, how := ActionPluginInstall, "installed"
	if opts.Upgrade {
		action, how = ActionPluginUpgrade, "upgraded"
	}
	rec := audit.Record{Action: action, Result: strings.TrimPrefix(action, "plugin.") + " requested",
		Explanation: fmt.Sprintf("%s %s a plugin package %s", by.Who, how, by.Where)}
	if opts.Approve {
		rec.Explanation += ", approving a widening at once"
	}
	opts.Approver = by.ID
	out, err := s.pluginChange(ctx, by, rec, func() (plugin.Outcome, error) { return s.Plugins.Install(src, opts) })
	if len(out.Tests) > 0 && out.Doc != nil && s.Programs != nil {
		// The capabilities' test status, for plugin list and the approval page.
		if serr := conformance.Save(ctx, s.Programs, out.Doc, out.Tests); serr != nil {
			s.warn(action)(serr)
		}
	}
	return out, err
}

// ApprovePlugin approves the widening pending for the plugin appID, by by: the one the person
// saw (seen, its manifest digest: plugin.Host.ApproveSeen), or with seen "" whichever is
// pending. The pending version is compared again with what is locked now; a reject is still
// refused (an outcome recorded as CAPABILITY_DENIED, not an error).
func (s *Service) ApprovePlugin(ctx context.Context, by Actor, appID, seen string) (plugin.Outcome, error) {
	if s.Plugins == nil {
		return plugin.Outcome{}, ErrUnavailable
	}
	if _, err := manifest.ParseAppID(appID); err != nil {
		return plugin.Outcome{}, fmt.Errorf("operator: %w: %w", plugin.ErrNoPending, err)
	}
	if len(seen) > audit.MaxFieldBytes {
		return plugin.Outcome{}, plugin.ErrPendingChanged
	}
	rec := audit.Record{Action: ActionPluginApprove, App: appID, Result: "approve requested",
		Explanation: fmt.Sprintf("%s approved the plugin's pending widening %s", by.Who, by.Where)}
	if seen != "" {
		rec.Explanation = fmt.Sprintf("%s approved the plugin's pending widening (manifest %s) %s", by.Who, seen, by.Where)
	}
	return s.pluginChange(ctx, by, rec, func() (plugin.Outcome, error) {
		if seen == "" {
			return s.Plugins.Approve(appID, by.ID)
		}
		return s.Plugins.ApproveSeen(appID, seen, by.ID)
	})
}

// RemovePlugin removes the plugin appID and any widening pending for it, by by. A removal
// only takes away: it is made even when it cannot be recorded.
func (s *Service) RemovePlugin(ctx context.Context, by Actor, appID string) error {
	if s.Plugins == nil {
		return ErrUnavailable
	}
	if _, err := manifest.ParseAppID(appID); err != nil {
		return fmt.Errorf("operator: %w: %w", plugin.ErrNotInstalled, err)
	}
	rec := audit.Record{Action: ActionPluginRemove, App: appID, Result: "remove requested",
		Explanation: fmt.Sprintf("%s removed the plugin, and any widening pending for it, %s", by.Who, by.Where)}
	if s.NoAuditLog {
		return s.Plugins.Remove(appID)
	}
	return Change(ctx, s.Audit, by.ID, rec, true, func(*audit.Record) error { return s.Plugins.Remove(appID) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// errRefused stands, inside pluginChange, for an outcome the lockfile refused.
var errRefused = errors.New("refused")

// pluginChange makes a plugin change with its records: the outcome record names the app and
// what came of it, a refusal as CAPABILITY_DENIED.
func (s *Service) pluginChange(ctx context.Context, by Actor, rec audit.Record, change func() (plugin.Outcome, error)) (plugin.Outcome, error) {
	var out plugin.Outcome
	if s.NoAuditLog {
		return change()
	}
	err := Change(ctx, s.Audit, by.ID, rec, false, func(r *audit.Record) error {
		var err error
		out, err = change()
		noteOutcome(r, out)
		if err == nil && out.Refused {
			return errRefused
		}
		return err
	}, func(err error) string {
		if errors.Is(err, errRefused) {
			return CodeCapabilityDenied
		}
		return Code(err, CodeInvalidRequest)
	}, s.warn(rec.Action))
	if errors.Is(err, errRefused) {
		err = nil
	}
	return out, err
}

// noteOutcome names in the outcome record the app a plugin change changed and what came of
// it: applied to the lockfile, waiting for approval, or refused.
func noteOutcome(r *audit.Record, out plugin.Outcome) {
	if _, err := manifest.ParseAppID(out.AppID); err == nil {
		r.App = out.AppID
	}
	switch {
	case out.Refused:
		r.Explanation += "; refused"
	case out.Pending:
		r.Explanation += "; the widening waits for approval"
	case out.Applied:
		r.Explanation += "; applied to the lockfile"
	}
}
