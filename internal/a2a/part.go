package a2a

import (
	"encoding/json"
	"fmt"
	"strings"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// task is what a message/send asks capgate to do: one capability, with its params, as the
// broker takes them. It is read from the request's own bytes (jcs, strictly), not from the
// SDK's decoding, which keeps the last of two members of one name and reads every number
// as a float64: what is checked is what runs.
type task struct {
	App, Method string          // broker.Request's: the app id and the full capability id, or the IPC form's
	Params      json.RawMessage // canonical JSON of an object
	ParamsValue any             // Params decoded, as jcs.Value.Interface gives it
	ContextID   string          // the message's contextId, "" for none
}

// problem is one rule a message/send breaks, at a field path of the JSON-RPC request.
type problem struct{ path, rule string }

// paramsError is a message/send whose params break the rules of a task. Its text names the
// field paths and rules, never a value: it goes back to the client, and into logs. It is
// a2a's ErrInvalidParams (JSON-RPC -32602).
type paramsError struct{ problems []problem }

func (e *paramsError) Error() string {
	var b strings.Builder
	b.WriteString("invalid params: ")
	for i, p := range e.problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.path)
		b.WriteString(": ")
		b.WriteString(p.rule)
	}
	return b.String()
}

func (e *paramsError) Unwrap() error { return a2asdk.ErrInvalidParams }

// The members a task's part and its data may have. A part's metadata is A2A's own and is
// read by nobody here; the data's members are capgate's, and nothing else is taken, so that
// a member a client thinks means something (a token, a flag) is refused rather than ignored.
var (
	partMembers = map[string]bool{"kind": true, "data": true, "metadata": true}
	dataMembers = map[string]bool{"capability": true, "app": true, "method": true, "params": true}
)

// taskShape is the part a task is, for the refusals that say so.
const taskShape = `one data part {"capability": "<capability id>", "params": {...}}`

// parseSend reads the params of a message/send as a task. The message may carry A2A's
// other members (messageId, role, metadata and the rest), which are not read; its taskId
// must be empty (a task takes one message), its contextId, when given, an id, and its parts
// exactly one data part that parseTaskPart takes.
func parseSend(params jcs.Value) (task, error) {
	var ps []problem
	bad := func(path, rule string) { ps = append(ps, problem{path, rule}) }
	if params.Kind != jcs.Object {
		return task{}, &paramsError{[]problem{{"params", "must be an object"}}}
	}
	msg, ok := params.Get("message")
	if !ok {
		return task{}, &paramsError{[]problem{{"params.message", "required"}}}
	}
	if msg.Kind != jcs.Object {
		return task{}, &paramsError{[]problem{{"params.message", "must be an object"}}}
	}
	var t task
	if id, ok := msg.Get("taskId"); ok && !(id.Kind == jcs.String && id.Str == "") && id.Kind != jcs.Null {
		bad("params.message.taskId", "a task takes one message: give a new task, without taskId")
	}
	if c, ok := msg.Get("contextId"); ok && c.Kind != jcs.Null {
		if c.Kind != jcs.String || (c.Str != "" && !isID(c.Str)) {
			bad("params.message.contextId", fmt.Sprintf("must be an id of at most %d letters, digits and _.:-", MaxIDBytes))
		} else {
			t.ContextID = strings.Clone(c.Str)
		}
	}
	parts, ok := msg.Get("parts")
	switch {
	case !ok:
		bad("params.message.parts", "required: "+taskShape)
	case parts.Kind != jcs.Array:
		bad("params.message.parts", "must be an array")
	case len(parts.Items) != 1:
		bad("params.message.parts", fmt.Sprintf("has %d parts: a task is exactly %s", len(parts.Items), taskShape))
	default:
		pt, pps := parseTaskPart(parts.Items[0], "params.message.parts[0]")
		ps = append(ps, pps...)
		t.App, t.Method, t.Params, t.ParamsValue = pt.App, pt.Method, pt.Params, pt.ParamsValue
	}
	if len(ps) > 0 {
		return task{}, &paramsError{ps}
	}
	return t, nil
}

// parseTaskPart reads one part of a message, at path, as a task: kind "data", and data
// {"capability": ID, "params": {...}} or, as the IPC envelope says it, {"app": APP,
// "method": METHOD, "params": {...}}; params may be left out for {}. A text or file part is
// refused: a task names a capability, and capgate reads no words as a call.
func parseTaskPart(part jcs.Value, path string) (task, []problem) {
	var ps []problem
	bad := func(path, rule string) { ps = append(ps, problem{path, rule}) }
	if part.Kind != jcs.Object {
		return task{}, []problem{{path, "must be " + taskShape}}
	}
	kind, _ := part.Get("kind")
	switch {
	case kind.Kind == jcs.String && kind.Str == "text":
		return task{}, []problem{{path, "a text part: a task names a capability, as " + taskShape}}
	case kind.Kind == jcs.String && kind.Str == "file":
		return task{}, []problem{{path, "a file part: a task names a capability, as " + taskShape}}
	case kind.Kind != jcs.String || kind.Str != "data":
		return task{}, []problem{{path + ".kind", `must be "data"`}}
	}
	unknown(part, path, partMembers, bad)
	data, ok := part.Get("data")
	if !ok {
		bad(path+".data", "required")
		return task{}, ps
	}
	dpath := path + ".data"
	if data.Kind != jcs.Object {
		bad(dpath, "must be an object")
		return task{}, ps
	}
	unknown(data, dpath, dataMembers, bad)
	str := func(name string) (string, bool) {
		v, ok := data.Get(name)
		if !ok {
			return "", false
		}
		if v.Kind != jcs.String {
			bad(dpath+"."+name, "must be a string")
			return "", true
		}
		return v.Str, true
	}
	var t task
	capability, hasCap := str("capability")
	app, hasApp := str("app")
	method, hasMethod := str("method")
	switch {
	case hasCap && (hasApp || hasMethod):
		bad(dpath, "names a capability either by capability or by app and method, not both")
	case hasCap:
		if id, err := manifest.ParseCapabilityID(capability); err != nil {
			bad(dpath+".capability", "must be a capability id {domain}.{app_id}.{action}")
		} else {
			t.App, t.Method = id.AppID().String(), strings.Clone(id.String())
		}
	case hasApp || hasMethod:
		if !hasApp {
			bad(dpath+".app", "required beside method")
		} else if !appGrammar(app) {
			bad(dpath+".app", "must match "+appPattern)
		}
		if !hasMethod {
			bad(dpath+".method", "required beside app")
		} else if !methodGrammar(method) {
			bad(dpath+".method", "must match "+methodPattern)
		}
		t.App, t.Method = strings.Clone(app), strings.Clone(method)
	default:
		bad(dpath+".capability", "required: a task names the capability it runs")
	}
	if p, ok := data.Get("params"); !ok {
		t.Params, t.ParamsValue = json.RawMessage("{}"), map[string]any{}
	} else if p.Kind != jcs.Object {
		bad(dpath+".params", "must be an object")
	} else if c, err := p.AppendCanonical(nil); err != nil {
		bad(dpath+".params", "has no canonical form")
	} else {
		t.Params, t.ParamsValue = c, p.Interface()
	}
	if len(ps) > 0 {
		return task{}, ps
	}
	return t, nil
}

// unknown refuses each member of v that known does not name. The path names the member
// when its name is a short identifier, and only the object otherwise: a name is the
// client's text, and a long or odd one has no place in an error.
func unknown(v jcs.Value, path string, known map[string]bool, bad func(path, rule string)) {
	for _, m := range v.Members {
		if known[m.Name] {
			continue
		}
		if isIdent(m.Name) {
			bad(path+"."+m.Name, "not a member of a task")
		} else {
			bad(path, "has a member that is not one of a task")
		}
	}
}

// isIdent reports whether s is 1 to 64 letters, digits and underscores.
func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isID reports whether s is a task or context id a client may send: 1 to MaxIDBytes
// letters, digits and _.:- (the UUIDs capgate makes are).
func isID(s string) bool {
	if s == "" || len(s) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// The grammars of the IPC envelope's app and method (internal/ipc/grammar.go), which the
// data's IPC form takes as the envelope does.
const (
	appPattern    = `^[a-z][a-z0-9._-]{0,252}$`
	methodPattern = `^[a-z][a-z0-9_.]{0,511}$`
)

func appGrammar(s string) bool    { return grammar(s, 253, "._-") }
func methodGrammar(s string) bool { return grammar(s, 512, "_.") }

// grammar reports whether s is a lower-case letter and then up to max-1 lower-case letters,
// digits and bytes of extra.
func grammar(s string, max int, extra string) bool {
	if s == "" || len(s) > max || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}
