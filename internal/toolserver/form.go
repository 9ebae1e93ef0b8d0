package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/store"
)

// KindForm is the kind of consent request that asks the person to fill in a tool server's
// form (a form-mode information request), store.Consent.Kind. Its Params hold the server's
// message and the form's fields (FormRequest); the approval page shows them as a form, and
// the person's answer is kept beside the request (SaveFormAnswer) before it is approved.
const KindForm = "toolserver_form"

// Field types a form may ask for: MCP's form-mode elicitation asks for a flat object of
// primitive fields.
const (
	FieldString  = "string"
	FieldNumber  = "number"
	FieldInteger = "integer"
	FieldBoolean = "boolean"
)

// FormField is one field of a tool server's form, as capgate shows it. Title and Description
// are the server's words, untrusted. Value is what capgate filled in from the person's
// profile (Profile names the field), nil for none.
type FormField struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Value       any      `json:"value,omitempty"`
	Profile     string   `json:"profile,omitempty"`
}

// FormRequest is the Params of a KindForm consent request.
type FormRequest struct {
	Message string      `json:"message"`
	Fields  []FormField `json:"fields"`
}

// ErrFormAnswer is wrapped by the error of an answer that does not fit its form.
var ErrFormAnswer = errors.New("toolserver: the answer does not fit the form")

// formFields reads a form's requested schema: an object whose properties are each a
// string (maybe an enum of strings), number, integer or boolean, at most MaxFormFields, every
// required name one of them. A schema of any other shape is "" and the rule it breaks.
func formFields(schema any) ([]FormField, string) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, "the form's schema cannot be read"
	}
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Type != "object" {
		return nil, "requestedSchema: must be an object schema"
	}
	if len(s.Properties) == 0 || len(s.Properties) > MaxFormFields {
		return nil, fmt.Sprintf("requestedSchema.properties: must hold 1 to %d fields", MaxFormFields)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []FormField
	for _, name := range names {
		at := "requestedSchema.properties." + strconv.Quote(name)
		if !utf8.ValidString(name) || len(name) == 0 || len(name) > 64 {
			return nil, "requestedSchema.properties: a field name is not 1 to 64 bytes of UTF-8"
		}
		var p struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
		}
		if err := json.Unmarshal(s.Properties[name], &p); err != nil {
			return nil, at + ": not a field of a string, number, integer or boolean (an enum is of strings)"
		}
		switch p.Type {
		case FieldString, FieldNumber, FieldInteger, FieldBoolean:
		default:
			return nil, at + ".type: must be string, number, integer or boolean"
		}
		if len(p.Enum) > 0 && p.Type != FieldString {
			return nil, at + ".enum: only a string field may be an enum"
		}
		for _, e := range p.Enum {
			if len(e) > MaxFormValueBytes || !utf8.ValidString(e) {
				return nil, at + ".enum: a value is too long or not UTF-8"
			}
		}
		out = append(out, FormField{Name: name, Type: p.Type, Enum: p.Enum, Required: slices.Contains(s.Required, name),
			Title: clipText(strings.ToValidUTF8(p.Title, "\uFFFD"), MaxFormTextBytes), Description: clipText(strings.ToValidUTF8(p.Description, "\uFFFD"), MaxFormTextBytes)})
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return nil, "requestedSchema.required: names a field the form does not have"
		}
	}
	return out, ""
}

// fillFromProfile fills the fields of fields that are profile fields (profile.FieldOf) with
// p's values, and reports whether every field is then filled.
func fillFromProfile(fields []FormField, p profile.Profile) bool {
	all := true
	for i := range fields {
		f := &fields[i]
		if pf, ok := profile.FieldOf(f.Name, f.Type); ok {
			if v := p.Value(pf); v != "" && (len(f.Enum) == 0 || slices.Contains(f.Enum, v)) {
				f.Value, f.Profile = v, string(pf)
				continue
			}
		}
		all = false
	}
	return all
}

// profileContent is the answer of a form every field of which capgate filled from the
// profile.
func profileContent(fields []FormField) map[string]any {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f.Name] = f.Value
	}
	return out
}

// ParseFormAnswer reads the person's answer to a form from the texts the page posted, by
// field name: a string as typed (NFC is the browser's), an enum one of its values, a number
// or an integer in decimal, a boolean "true" or absent for false. A required field left
// empty, or a value that is not of its field's type, is an error naming the field, never the
// value; an optional field left empty is left out.
func ParseFormAnswer(fields []FormField, texts map[string]string) (map[string]any, error) {
	out := map[string]any{}
	var errs []error
	bad := func(name, rule string) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrFormAnswer, strconv.Quote(name), rule))
	}
	for _, f := range fields {
		t, given := texts[f.Name]
		if f.Type == FieldBoolean {
			switch t {
			case "", "false":
				out[f.Name] = false
			case "true":
				out[f.Name] = true
			default:
				bad(f.Name, "must be true or false")
			}
			continue
		}
		if !given || t == "" {
			if f.Required {
				bad(f.Name, "is required")
			}
			continue
		}
		if len(t) > MaxFormValueBytes || !utf8.ValidString(t) {
			bad(f.Name, fmt.Sprintf("must be at most %d bytes of UTF-8", MaxFormValueBytes))
			continue
		}
		switch f.Type {
		case FieldString:
			if len(f.Enum) > 0 && !slices.Contains(f.Enum, t) {
				bad(f.Name, "must be one of the choices shown")
				continue
			}
			out[f.Name] = t
		case FieldNumber:
			n, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
				bad(f.Name, "must be a number")
				continue
			}
			out[f.Name] = n
		case FieldInteger:
			n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
			if err != nil || n > 1<<53-1 || n < -(1<<53-1) {
				bad(f.Name, "must be a whole number")
				continue
			}
			out[f.Name] = n
		}
	}
	return out, errors.Join(errs...)
}

// checkAnswer reports whether content, read back from the store, is an answer ParseFormAnswer
// could give for fields: no other member, each of its field's type.
func checkAnswer(fields []FormField, content map[string]any) bool {
	for name, v := range content {
		i := slices.IndexFunc(fields, func(f FormField) bool { return f.Name == name })
		if i < 0 {
			return false
		}
		f := fields[i]
		switch v := v.(type) {
		case string:
			if f.Type != FieldString || (len(f.Enum) > 0 && !slices.Contains(f.Enum, v)) || len(v) > MaxFormValueBytes {
				return false
			}
		case bool:
			if f.Type != FieldBoolean {
				return false
			}
		case float64:
			if f.Type != FieldNumber && (f.Type != FieldInteger || v != math.Trunc(v)) {
				return false
			}
		default:
			return false
		}
	}
	for _, f := range fields {
		if _, ok := content[f.Name]; f.Required && !ok {
			return false
		}
	}
	return true
}

// formAnswers is the store state the person's answers to forms wait in, by consent id, until
// the call takes them: the host's own.
const formAnswers = "capgate.toolserver.form"

// SaveFormAnswer keeps the person's answer to the form request consentID, for the call that
// waits on it, before the request is approved.
// A nil content removes what was kept.
func SaveFormAnswer(ctx context.Context, st store.State, consentID string, content map[string]any) error {
	if content == nil {
		return st.PutState(ctx, formAnswers, consentID, nil)
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return err
	}
	return st.PutState(ctx, formAnswers, consentID, raw)
}

// takeFormAnswer reads and removes the answer kept for consentID.
func takeFormAnswer(ctx context.Context, st store.State, consentID string) (map[string]any, bool) {
	raw, err := st.GetState(ctx, formAnswers, consentID)
	if err != nil {
		return nil, false
	}
	_ = st.PutState(ctx, formAnswers, consentID, nil)
	var content map[string]any
	if json.Unmarshal(raw, &content) != nil {
		return nil, false
	}
	return content, true
}

// FormRequestOf reads the Params of a KindForm consent request.
func FormRequestOf(params json.RawMessage) (FormRequest, error) {
	var fr FormRequest
	if err := json.Unmarshal(params, &fr); err != nil {
		return FormRequest{}, err
	}
	return fr, nil
}

// filledFromProfile answers a form every field of which is the person's profile, which the
// person granted this server: accept with those values, audited as capgate's answer.
func (s *server) filledFromProfile(ctx context.Context, c *call, fields []FormField) *mcpsdk.ElicitResult {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Profile
	}
	said := "capgate filled the server's form from the person's profile (" + strings.Join(names, ", ") + "), which the person lets this server have"
	c.note(said)
	s.auditInput(ctx, c, "", AnswerAccept, said)
	return &mcpsdk.ElicitResult{Action: AnswerAccept, Content: profileContent(fields)}
}

// askForm opens a consent request showing the form (with what the profile filled in, when
// the person granted it) and waits for the person to fill it in (approve, with the answer
// kept beside the request), decline (deny) or leave it (cancel), within the call c.
func (s *server) askForm(ctx context.Context, c *call, p *mcpsdk.ElicitParams, fields []FormField) (*mcpsdk.ElicitResult, error) {
	summary := fmt.Sprintf("The MCP tool server %q asks you to fill in a form, during the call of %s by the client %s. "+
		"Give only what you want it to have: capgate sends the server exactly what you enter, and nothing if you decline. "+
		"The form's message, titles and descriptions are the server's own words, untrusted.", s.cfg.Name, c.capabilityID, c.clientID)
	params, err := json.Marshal(FormRequest{Message: clipText(strings.ToValidUTF8(p.Message, "\uFFFD"), consent.MaxTextBytes), Fields: fields})
	if err == nil {
		params, err = jcs.Canonicalize(params)
	}
	if err != nil || len(params) > consent.MaxPayloadBytes/2 {
		return s.declined(ctx, c, "form", ReasonFormShape+": too large to show"), nil
	}
	id, answer, err := s.askInput(ctx, c, KindForm, summary, params, "medium")
	if err != nil || id == "" {
		return &mcpsdk.ElicitResult{Action: AnswerCancel}, err
	}
	res := &mcpsdk.ElicitResult{Action: answer}
	var said string
	switch answer {
	case AnswerAccept:
		content, ok := takeFormAnswer(context.WithoutCancel(ctx), s.m.o.Env.Store, id)
		if !ok || !checkAnswer(fields, content) {
			// An approval without an answer that fits (approved elsewhere than the form, or
			// a stored answer that does not read) gives the server nothing.
			res.Action, said = AnswerCancel, "the person's answer to the server's form could not be read, so nothing was sent (cancelled)"
			break
		}
		res.Content = content
		said = fmt.Sprintf("the person filled in the server's form (%d of its %d fields given)", len(content), len(fields))
	case AnswerDecline:
		said = "the person declined the server's form"
	default:
		said = "the server's form went unanswered (cancelled)"
	}
	c.note(said)
	s.auditInput(ctx, c, id, res.Action, said)
	return res, nil
}
