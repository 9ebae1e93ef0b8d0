package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// Handler runs a desktop app's derived capabilities through its accessibility interfaces.
// Each call finds the app by its name and the element by its path again, and checks that
// the element still is what it was (its role, the interface the call needs, its action)
// before acting: one that moved, vanished or changed answers not found (METHOD_NOT_FOUND),
// saying why. It is safe for concurrent use.
type Handler struct {
	bus     *Bus
	appName string
	doc     *manifest.Document
	elems   map[string]Element
}

// NewHandler returns the handler of the derived app d, named appName on bus, with doc its
// manifest as registered.
func NewHandler(bus *Bus, appName string, doc *manifest.Document, d *Derived) *Handler {
	return &Handler{bus: bus, appName: appName, doc: doc, elems: d.Elements}
}

// Manifest implements sdk.Handler.
func (h *Handler) Manifest() *manifest.Document { return h.doc }

// moved is the answer of a call whose element is not there as it was.
func moved(id string, err error) error {
	return &sdk.Error{Code: sdk.CodeNotFound, CapabilityID: id, Reason: err.Error()}
}

// Invoke implements sdk.Handler.
func (h *Handler) Invoke(ctx context.Context, id string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	app, err := h.app(ctx)
	if err != nil {
		return sdk.Result{}, &sdk.Error{Code: sdk.CodeAppUnresponsive, AppID: h.doc.Manifest().AppID, Reason: "the app is not running"}
	}
	if id == "ui."+h.doc.Manifest().AppID+"."+KindList {
		return h.list(ctx, app)
	}
	el, ok := h.elems[id]
	if !ok {
		return sdk.Result{}, sdk.NotFound(id)
	}
	n, err := h.bus.Find(ctx, app, el.Path)
	if err != nil {
		return sdk.Result{}, moved(id, err)
	}
	var p struct {
		Text     string `json:"text"`
		Position int    `json:"position"`
	}
	if len(params) > 0 {
		_ = json.Unmarshal(params, &p)
	}
	switch el.Kind {
	case KindPress, KindToggle:
		if !n.Has("Action") || !slices.Contains(n.Actions, el.Action) {
			return sdk.Result{}, moved(id, errors.New("desktop: the element no longer has its action"))
		}
		err = h.bus.DoAction(ctx, n, el.Action)
	case KindSetText:
		if !n.Has("EditableText") {
			return sdk.Result{}, moved(id, errors.New("desktop: the element no longer takes text"))
		}
		err = h.bus.SetText(ctx, n, p.Text)
	case KindInsertText:
		if !n.Has("EditableText") {
			return sdk.Result{}, moved(id, errors.New("desktop: the element no longer takes text"))
		}
		err = h.bus.InsertText(ctx, n, p.Position, p.Text)
	case KindGetText:
		if !n.Has("Text") || n.Role == "password text" {
			return sdk.Result{}, moved(id, errors.New("desktop: the element no longer has readable text"))
		}
		text, err := h.bus.GetText(ctx, n)
		if err != nil {
			return sdk.Result{}, sdk.ExecutionFailed("the app did not give its text", true)
		}
		data, _ := json.Marshal(map[string]any{"text": text, "untrusted_output": true})
		return sdk.Result{Success: true, Data: data}, nil
	default:
		return sdk.Result{}, sdk.NotFound(id)
	}
	if err != nil {
		if errors.Is(err, ErrMoved) {
			return sdk.Result{}, moved(id, err)
		}
		return sdk.Result{}, sdk.ExecutionFailed("the app did not do it: "+err.Error(), true)
	}
	return sdk.Result{Success: true, Data: json.RawMessage(`{"status":"success"}`)}, nil
}

// app finds the running app by its name.
func (h *Handler) app(ctx context.Context) (App, error) {
	apps, err := h.bus.Apps(ctx)
	if err != nil {
		return App{}, err
	}
	for _, a := range apps {
		if a.Name == h.appName {
			return a, nil
		}
	}
	return App{}, errors.New("desktop: the app is not running")
}

// list answers list_elements: the elements of the tree as it is now.
func (h *Handler) list(ctx context.Context, app App) (sdk.Result, error) {
	tree, err := h.bus.Walk(ctx, app)
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the app's tree could not be read", true)
	}
	type entry struct {
		Role string `json:"role"`
		Name string `json:"name"`
		Path []Step `json:"path"`
	}
	var out []entry
	var walk func(n *Node)
	walk = func(n *Node) {
		if n != tree.Root {
			out = append(out, entry{n.Role, n.Name, n.Path})
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree.Root)
	data, _ := json.Marshal(map[string]any{"elements": out, "truncated": tree.Truncated, "untrusted_output": true})
	return sdk.Result{Success: true, Data: data}, nil
}
