package desktop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
)

// The AT-SPI2 names this package speaks.
const (
	registryName = "org.a11y.atspi.Registry"
	rootPath     = dbus.ObjectPath("/org/a11y/atspi/accessible/root")

	ifaceAccessible   = "org.a11y.atspi.Accessible"
	ifaceAction       = "org.a11y.atspi.Action"
	ifaceText         = "org.a11y.atspi.Text"
	ifaceEditableText = "org.a11y.atspi.EditableText"
)

// Bus is a connection to the accessibility bus. It is safe for concurrent use.
type Bus struct {
	conn *dbus.Conn
	addr string
}

// Address is the accessibility bus's D-Bus address, as the session bus gave it.
func (b *Bus) Address() string { return b.addr }

// ErrNoBus is a session without an accessibility bus: no session bus, or none answers
// org.a11y.Bus.GetAddress.
var ErrNoBus = errors.New("desktop: no accessibility bus in this session")

// Connect finds the accessibility bus through the session bus (DBUS_SESSION_BUS_ADDRESS)
// and connects to it. ctx bounds the connecting; the connection lives until Close (godbus
// would close a connection given a context when the context ends).
func Connect(ctx context.Context) (*Bus, error) {
	session, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("%w: the session bus: %w", ErrNoBus, err)
	}
	defer session.Close()
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	var addr string
	if err := session.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(cctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBus, err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to it: %w", ErrNoBus, err)
	}
	return &Bus{conn: conn, addr: addr}, nil
}

// Close closes the connection.
func (b *Bus) Close() error { return b.conn.Close() }

// Ref names one accessible object: the bus name of its app and its object path.
type Ref struct {
	Name string
	Path dbus.ObjectPath
}

// App is one application registered with the registry.
type App struct {
	Name string // its accessible name, the app's own word
	Ref  Ref
}

func (b *Bus) call(ctx context.Context, r Ref, method string, out any, args ...any) error {
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	c := b.conn.Object(r.Name, r.Path).CallWithContext(cctx, method, 0, args...)
	if out == nil {
		return c.Err
	}
	return c.Store(out)
}

func (b *Bus) property(ctx context.Context, r Ref, iface, name string) (dbus.Variant, error) {
	var v dbus.Variant
	err := b.call(ctx, r, "org.freedesktop.DBus.Properties.Get", &v, iface, name)
	return v, err
}

func (b *Bus) children(ctx context.Context, r Ref) ([]Ref, error) {
	var kids []struct {
		Name string
		Path dbus.ObjectPath
	}
	if err := b.call(ctx, r, ifaceAccessible+".GetChildren", &kids); err != nil {
		return nil, err
	}
	out := make([]Ref, len(kids))
	for i, k := range kids {
		out[i] = Ref{k.Name, k.Path}
	}
	return out, nil
}

func (b *Bus) name(ctx context.Context, r Ref) string {
	v, err := b.property(ctx, r, ifaceAccessible, "Name")
	if err != nil {
		return ""
	}
	s, _ := v.Value().(string)
	return clipName(s)
}

// Apps lists the applications registered with the registry, in its order.
func (b *Bus) Apps(ctx context.Context) ([]App, error) {
	kids, err := b.children(ctx, Ref{registryName, rootPath})
	if err != nil {
		return nil, fmt.Errorf("desktop: listing the registry's apps: %w", err)
	}
	out := make([]App, 0, len(kids))
	for _, k := range kids {
		out = append(out, App{Name: b.name(ctx, k), Ref: k})
	}
	return out, nil
}

// Step is one step of an element's path: its role and name, and which of its parent's
// children with that same role and name it is (0 for the first).
type Step struct {
	Role  string `json:"role"`
	Name  string `json:"name"`
	Index int    `json:"index"`
}

// Node is one element of an app's tree as a walk read it.
type Node struct {
	Role       string   // AT-SPI's role name: "push button", "text", "check box", ...
	Name       string   // its accessible name: the app's word
	Interfaces []string // the AT-SPI interfaces it implements, without the prefix: Action, Text, ...
	Actions    []string // its actions' names (Action), such as "click" or "press"
	Path       []Step   // from the app's root, which is not in it
	Children   []*Node
	ref        Ref
}

// Has reports whether the node implements the interface (its short name, such as "Text").
func (n *Node) Has(iface string) bool { return slices.Contains(n.Interfaces, iface) }

// Tree is an app's tree as one walk read it.
type Tree struct {
	App       App
	Root      *Node
	Nodes     int  // elements read
	Truncated bool // MaxDepth, MaxNodes or WalkTimeout left some out
}

// Walk reads the app's tree, at most MaxDepth deep and MaxNodes elements, within
// WalkTimeout.
func (b *Bus) Walk(ctx context.Context, app App) (*Tree, error) {
	ctx, cancel := context.WithTimeout(ctx, WalkTimeout)
	defer cancel()
	t := &Tree{App: app}
	root, err := b.node(ctx, app.Ref, nil)
	if err != nil {
		return nil, fmt.Errorf("desktop: reading the app's root: %w", err)
	}
	t.Root = root
	t.Nodes = 1
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		if depth >= MaxDepth || ctx.Err() != nil {
			t.Truncated = true
			return
		}
		kids, err := b.children(ctx, n.ref)
		if err != nil {
			return
		}
		seen := map[[2]string]int{}
		for _, k := range kids {
			if t.Nodes >= MaxNodes || ctx.Err() != nil {
				t.Truncated = true
				return
			}
			c, err := b.node(ctx, k, n.Path)
			if err != nil {
				continue
			}
			key := [2]string{c.Role, c.Name}
			c.Path[len(c.Path)-1].Index = seen[key]
			seen[key]++
			t.Nodes++
			n.Children = append(n.Children, c)
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return t, nil
}

// node reads one element; parent is its parent's path (nil for the app's root, whose path
// is empty).
func (b *Bus) node(ctx context.Context, r Ref, parent []Step) (*Node, error) {
	n := &Node{ref: r, Name: b.name(ctx, r)}
	if err := b.call(ctx, r, ifaceAccessible+".GetRoleName", &n.Role); err != nil {
		return nil, err
	}
	var ifaces []string
	if err := b.call(ctx, r, ifaceAccessible+".GetInterfaces", &ifaces); err == nil {
		for _, i := range ifaces {
			n.Interfaces = append(n.Interfaces, strings.TrimPrefix(i, "org.a11y.atspi."))
		}
	}
	if n.Has("Action") {
		var acts []struct{ Name, Description, Keybinding string }
		if err := b.call(ctx, r, ifaceAction+".GetActions", &acts); err == nil {
			for _, a := range acts {
				n.Actions = append(n.Actions, a.Name)
			}
		}
	}
	if parent != nil {
		n.Path = append(slices.Clone(parent), Step{Role: n.Role, Name: n.Name})
	} else {
		n.Path = []Step{}
	}
	return n, nil
}

// ErrMoved is an element that is not where its path says any more: it moved, vanished, or
// no longer is what it was.
var ErrMoved = errors.New("desktop: the element is not where it was")

// Find resolves path in the app again, from its root, by role, name and index at every
// step, as the tree is now.
func (b *Bus) Find(ctx context.Context, app App, path []Step) (*Node, error) {
	n, err := b.node(ctx, app.Ref, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: the app does not answer: %w", ErrMoved, err)
	}
	for depth, s := range path {
		kids, err := b.children(ctx, n.ref)
		if err != nil {
			return nil, fmt.Errorf("%w: step %d cannot be read", ErrMoved, depth+1)
		}
		seen := 0
		var next *Node
		for _, k := range kids {
			c, err := b.node(ctx, k, n.Path)
			if err != nil || c.Role != s.Role || c.Name != s.Name {
				continue
			}
			if seen == s.Index {
				c.Path[len(c.Path)-1].Index = seen
				next = c
				break
			}
			seen++
		}
		if next == nil {
			return nil, fmt.Errorf("%w: no %s named %q at step %d of its path", ErrMoved, s.Role, s.Name, depth+1)
		}
		n = next
	}
	return n, nil
}

// DoAction runs the element's action named action (Action.DoAction).
func (b *Bus) DoAction(ctx context.Context, n *Node, action string) error {
	i := slices.Index(n.Actions, action)
	if i < 0 {
		return fmt.Errorf("%w: it has no action %q now", ErrMoved, action)
	}
	var ok bool
	if err := b.call(ctx, n.ref, ifaceAction+".DoAction", &ok, int32(i)); err != nil {
		return err
	}
	if !ok {
		return errors.New("desktop: the app refused the action")
	}
	return nil
}

// SetText replaces the element's text (EditableText.SetTextContents).
func (b *Bus) SetText(ctx context.Context, n *Node, text string) error {
	var ok bool
	if err := b.call(ctx, n.ref, ifaceEditableText+".SetTextContents", &ok, text); err != nil {
		return err
	}
	if !ok {
		return errors.New("desktop: the app refused the text")
	}
	return nil
}

// InsertText inserts text at position (EditableText.InsertText).
func (b *Bus) InsertText(ctx context.Context, n *Node, position int, text string) error {
	var ok bool
	if err := b.call(ctx, n.ref, ifaceEditableText+".InsertText", &ok, int32(position), text, int32(utf8.RuneCountInString(text))); err != nil {
		return err
	}
	if !ok {
		return errors.New("desktop: the app refused the text")
	}
	return nil
}

// GetText reads the element's whole text (Text.GetText), at most MaxTextBytes.
func (b *Bus) GetText(ctx context.Context, n *Node) (string, error) {
	v, err := b.property(ctx, n.ref, ifaceText, "CharacterCount")
	if err != nil {
		return "", err
	}
	count, _ := v.Value().(int32)
	var s string
	if err := b.call(ctx, n.ref, ifaceText+".GetText", &s, int32(0), count); err != nil {
		return "", err
	}
	if len(s) > MaxTextBytes {
		s = s[:MaxTextBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s, nil
}

// clipName keeps a name printable and at most MaxNameBytes.
func clipName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxNameBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
