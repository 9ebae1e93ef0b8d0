// Package settings is the Settings app of the token document as a Tier 1 app: get_setting and
// set_setting over its own data model, the system settings by category, each value checked
// against its domain, set_setting answering with the previous value and undoable within its
// window. It imports none of the gateway: it keeps its values through the State it is given.
package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.settings"
	Alias = "settings"
)

// State is where the app keeps its values: a key-value store it alone writes. Get returns
// ErrUnset for a key never set.
type State interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, value []byte) error
}

// ErrUnset is what State.Get returns for a key with no value.
var ErrUnset = errors.New("unset")

// kind is a setting's value domain.
type kind struct {
	typ     string   // "string", "bool", "int", "array"
	options []string // allowed strings, when not empty
	min     int64
	max     int64 // for ints, when min < max
	def     any
}

// domains are the document's categories and keys with their value domains and defaults.
var domains = map[string]map[string]kind{
	"appearance": {
		"theme":                {typ: "string", options: []string{"dark", "light", "classic", "ocean"}, def: "dark"},
		"accent_color":         {typ: "string", options: []string{"blue", "green", "orange", "purple", "red"}, def: "blue"},
		"font_size":            {typ: "string", options: []string{"small", "medium", "large"}, def: "medium"},
		"animations_enabled":   {typ: "bool", def: true},
		"transparency_enabled": {typ: "bool", def: false},
	},
	"display": {
		"brightness":   {typ: "int", min: 0, max: 100, def: int64(80)},
		"resolution":   {typ: "string", options: []string{"1920x1080", "1280x720", "2560x1440", "3840x2160"}, def: "1920x1080"},
		"refresh_rate": {typ: "int", min: 24, max: 360, def: int64(60)},
		"night_light":  {typ: "bool", def: false},
	},
	"sound": {
		"master_volume": {typ: "int", min: 0, max: 100, def: int64(50)},
		"input_volume":  {typ: "int", min: 0, max: 100, def: int64(50)},
		"output_device": {typ: "string", def: "default"},
		"input_device":  {typ: "string", def: "default"},
		"sound_effects": {typ: "bool", def: true},
	},
	"network": {
		"dhcp_enabled": {typ: "bool", def: true},
		"wifi_enabled": {typ: "bool", def: true},
		"ip_address":   {typ: "string", def: ""},
		"gateway":      {typ: "string", def: ""},
		"dns_servers":  {typ: "array", def: []any{}},
	},
	"keyboard": {
		"layout":       {typ: "string", options: []string{"us", "uk", "de", "fr"}, def: "us"},
		"repeat_rate":  {typ: "string", options: []string{"slow", "normal", "fast"}, def: "normal"},
		"repeat_delay": {typ: "string", options: []string{"short", "normal", "long"}, def: "normal"},
	},
	"datetime": {
		"timezone":   {typ: "string", def: "UTC"},
		"use_24hour": {typ: "bool", def: true},
		"auto_time":  {typ: "bool", def: true},
	},
}

// App is the Settings app.
type App struct {
	doc   *manifest.Document
	state State
	mu    sync.Mutex // serializes set_setting's read-modify-write and undo
}

// New returns the app with its manifest (as loaded and signed by the host) and its state.
func New(doc *manifest.Document, state State) *App { return &App{doc: doc, state: state} }

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

type params struct {
	Category string          `json:"category"`
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
}

func (a *App) get(ctx context.Context, category, key string) (any, error) {
	k := domains[category][key]
	raw, err := a.state.Get(ctx, category+"."+key)
	if errors.Is(err, ErrUnset) {
		return k.def, nil
	}
	if err != nil {
		return nil, sdk.ExecutionFailed("the settings store is unavailable", true)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return k.def, nil
	}
	return v, nil
}

// getRaw is get's value as JSON: the stored text as it is when it is JSON, without a decode
// and an encode on every read.
func (a *App) getRaw(ctx context.Context, category, key string) (json.RawMessage, error) {
	raw, err := a.state.Get(ctx, category+"."+key)
	if err == nil && json.Valid(raw) {
		return raw, nil
	}
	if err != nil && !errors.Is(err, ErrUnset) {
		return nil, sdk.ExecutionFailed("the settings store is unavailable", true)
	}
	return defaults[category][key], nil
}

// defaults are the settings' default values as JSON, made once.
var defaults = func() map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	for c, keys := range domains {
		out[c] = map[string]json.RawMessage{}
		for k, kd := range keys {
			def, err := json.Marshal(kd.def)
			if err != nil {
				panic("settings: the default of " + c + "." + k + " is not JSON")
			}
			out[c][k] = def
		}
	}
	return out
}()

// getAnswer is get_setting's result for a setting of the table and its value (valid JSON):
// what encoding/json writes for the struct of those four fields (the value compacted),
// built without reflection. The category, key and type are the table's
// own names, which need no escape.
func getAnswer(category, key string, value json.RawMessage) json.RawMessage {
	typ := domains[category][key].typ
	b := make([]byte, 0, len(`{"category":"","key":"","type":"","value":}`)+len(category)+len(key)+len(typ)+len(value))
	b = append(b, `{"category":"`...)
	b = append(b, category...)
	b = append(b, `","key":"`...)
	b = append(b, key...)
	b = append(b, `","type":"`...)
	b = append(b, typ...)
	b = append(b, `","value":`...)
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, value) != nil { // valid JSON, stored by hand perhaps with spaces
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// check reads value for the setting's domain; the error names the setting, never the value.
func check(category, key string, value json.RawMessage) (any, error) {
	k, ok := domains[category][key]
	if !ok {
		return nil, sdk.InvalidParams(manifest.Problems{{Path: "key", Rule: "not a setting of this category"}})
	}
	bad := func(rule string) error { return sdk.InvalidParams(manifest.Problems{{Path: "value", Rule: rule}}) }
	switch k.typ {
	case "string":
		var s string
		if json.Unmarshal(value, &s) != nil {
			return nil, bad("must be a string")
		}
		if len(k.options) > 0 {
			for _, o := range k.options {
				if s == o {
					return s, nil
				}
			}
			return nil, bad("must be one of " + strings.Join(k.options, ", "))
		}
		if len(s) > 256 {
			return nil, bad("longer than 256 bytes")
		}
		return s, nil
	case "bool":
		var b bool
		if json.Unmarshal(value, &b) != nil {
			return nil, bad("must be true or false")
		}
		return b, nil
	case "int":
		var n int64
		if json.Unmarshal(value, &n) != nil || n < k.min || n > k.max {
			return nil, bad(fmt.Sprintf("must be an integer from %d to %d", k.min, k.max))
		}
		return n, nil
	case "array":
		var xs []string
		if json.Unmarshal(value, &xs) != nil || len(xs) > 16 {
			return nil, bad("must be a list of at most 16 strings")
		}
		return xs, nil
	}
	return nil, bad("unknown setting type")
}

// Invoke implements sdk.Handler.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var p params
	if err := json.Unmarshal(raw, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object"}})
	}
	if _, ok := domains[p.Category]; !ok {
		return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "category", Rule: "not a settings category"}})
	}
	switch id {
	case GetID:
		if _, ok := domains[p.Category][p.Key]; !ok {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "key", Rule: "not a setting of this category"}})
		}
		v, err := a.getRaw(ctx, p.Category, p.Key)
		if err != nil {
			return sdk.Result{}, err
		}
		return sdk.Result{Success: true, Data: getAnswer(p.Category, p.Key, v)}, nil
	case SetID:
		v, err := check(p.Category, p.Key, p.Value)
		if err != nil {
			return sdk.Result{}, err
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		prev, err := a.get(ctx, p.Category, p.Key)
		if err != nil {
			return sdk.Result{}, err
		}
		enc, _ := json.Marshal(v)
		if err := a.state.Put(ctx, p.Category+"."+p.Key, enc); err != nil {
			return sdk.Result{}, sdk.ExecutionFailed("the settings store is unavailable", true)
		}
		prevJSON, _ := json.Marshal(prev)
		undo, _ := json.Marshal(map[string]any{"category": p.Category, "key": p.Key, "value": json.RawMessage(prevJSON)})
		data, _ := json.Marshal(map[string]any{"status": "success", "previous_value": prev, "new_value": v})
		state, _ := json.Marshal(map[string]any{p.Category + "." + p.Key: v})
		return sdk.Result{Success: true, Data: data, StateAfter: state, UndoToken: string(undo)}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

// Undo implements sdk.Undoer: it puts back the value a set_setting replaced.
func (a *App) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	if id != SetID {
		return sdk.NotFound(id)
	}
	var p params
	if err := json.Unmarshal([]byte(undoToken), &p); err != nil {
		return sdk.ExecutionFailed("the undo record is damaged", false)
	}
	v, err := check(p.Category, p.Key, p.Value)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	enc, _ := json.Marshal(v)
	if err := a.state.Put(ctx, p.Category+"."+p.Key, enc); err != nil {
		return sdk.ExecutionFailed("the settings store is unavailable", true)
	}
	return nil
}

// The capability ids.
const (
	GetID = "settings.org.capgate.settings.get_setting"
	SetID = "settings.org.capgate.settings.set_setting"
)

// Manifest is the app's manifest, unsigned; the host signs it with its local app key.
const Manifest = `{
  "app_id": "org.capgate.settings",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "capabilities": [
    {
      "id": "settings.org.capgate.settings.get_setting",
      "name": "Read a setting",
      "description": "Reads one system setting: appearance, display, sound, network, keyboard or datetime.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "required": ["category", "key"], "additionalProperties": false,
        "properties": {"category": {"enum": ["appearance", "display", "sound", "network", "keyboard", "datetime"]}, "key": {"type": "string", "pattern": "^[a-z_0-9]{1,64}$", "format": "text"}}},
      "returns": {"type": "object", "required": ["category", "key", "value", "type"],
        "properties": {"category": {"type": "string"}, "key": {"type": "string"}, "value": {}, "type": {"type": "string"}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "system.settings.read",
      "risk": "low",
      "idempotency": "natural"
    },
    {
      "id": "settings.org.capgate.settings.set_setting",
      "name": "Change a setting",
      "description": "Changes one system setting and answers with its previous value; undoable for a minute.",
      "category": "SYSTEM",
      "parameters": {"type": "object", "required": ["category", "key", "value"], "additionalProperties": false,
        "properties": {"category": {"enum": ["appearance", "display", "sound", "network", "keyboard", "datetime"]}, "key": {"type": "string", "pattern": "^[a-z_0-9]{1,64}$", "format": "text"},
          "value": {"type": ["string", "number", "boolean", "array", "null"], "format": "text", "items": {"type": "string", "format": "text"}}}},
      "returns": {"type": "object", "required": ["status", "previous_value", "new_value"],
        "properties": {"status": {"const": "success"}, "previous_value": {}, "new_value": {}}},
      "side_effects": "write",
      "auth_level": "user",
      "permission": "system.settings.write",
      "risk": "medium",
      "undo_window_ms": 60000
    }
  ]
}`
