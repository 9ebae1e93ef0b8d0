package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/jcs"
)

// The hot request of the sessionless revision, a tools/call of a capability, is answered here
// without the SDK's per-request session. The SDK serves each 2026-07-28 request by connecting
// a session of its own to the request, decoding the body several times over and handing the
// call between its goroutines: some 250 µs a call on the development machine where the same
// exchange without it takes 50 (docs/performance.md, "An MCP call without the SDK's session
// per request"). Here the one shape of request is read once, strictly, and handed to the same
// tool handler the SDK would call, with the same request it would build; the answer is
// encoded with the SDK's own types and encoder, byte for byte what the SDK writes
// (TestFastCallAnswersAsTheSDK holds the two to it). Anything else, and anything this reading
// doubts, goes to the SDK untouched: other methods, capgate's own tools, a header or _meta
// member it does not know, a body it cannot read strictly, a tool whose input schema binds
// parameters to headers (x-mcp-header), every error the SDK answers itself. So the fast path
// never answers a request the SDK would refuse, and never answers one differently.

// fastCall answers r, a 2026-07-28 request of caller, when it is a tools/call of one of the
// client's capability tools in the shape fastCall reads, and reports whether it did. When it
// did not, it has written nothing and r.Body reads as it did before.
func (h *Handler) fastCall(w http.ResponseWriter, r *http.Request, caller broker.Caller) bool {
	if h.o.SDKOnly || !fastHeaders(r) || rebound(r) {
		return false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	body, err := readBack(r)
	if err != nil || len(body) > maxRequestBytes {
		return false
	}
	c, ok := parseFastCall(body, r.Header.Get("Mcp-Name"))
	if !ok {
		return false
	}
	s := h.warm.get(h, caller, baseURL(r))
	ct, ok := s.tool(c.name)
	if !ok || ct.paramHeaders {
		return false
	}
	// The request the SDK hands a tool handler: the params as it decodes them, and the
	// TokenInfo its bearer middleware (NewHandler's verify) puts in the request's extra.
	req := &mcpsdk.CallToolRequest{
		Params: &mcpsdk.CallToolParamsRaw{Meta: c.meta, Name: c.name, Arguments: c.args},
		Extra: &mcpsdk.RequestExtra{Header: r.Header, TokenInfo: &auth.TokenInfo{UserID: caller.ClientID,
			Extra: map[string]any{callerExtra: caller, goneExtra: r.Context().Done()}}},
	}
	// The SDK refuses _meta whose clientCapabilities, or clientInfo when there is one, does
	// not decode as its types; its own readers of them say whether they do.
	if req.ClientCapabilities() == nil || (c.clientInfo && req.ClientInfo() == nil) {
		return false
	}
	h.fast.Add(1)
	res, err := s.capabilityHandler(c.name)(r.Context(), req)
	if err != nil {
		// capabilityHandler answers every failure as a tool result (refusal); an error here
		// is a bug, answered as an internal error that names nothing of it.
		h.o.Logger.Error("mcp: a tool handler returned an error", "tool", c.name, "err", err)
		writeEvent(w, &jsonrpc.Response{ID: c.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool failed"}})
		return true
	}
	raw, err := resultJSON(res, h.impl())
	if err != nil {
		h.o.Logger.Error("mcp: encoding a tool result", "tool", c.name, "err", err)
		writeEvent(w, &jsonrpc.Response{ID: c.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result could not be encoded"}})
		return true
	}
	writeEvent(w, &jsonrpc.Response{ID: c.id, Result: raw})
	return true
}

// fastHeaders reports whether r's method and headers are those of a 2026-07-28 tools/call
// that the SDK would take: POST, one MCP-Protocol-Version naming the revision, Mcp-Method
// tools/call, one Mcp-Name, a JSON body, and an Accept that names both JSON and an event
// stream. A Last-Event-ID (which the SDK refuses on POST) or any Mcp-Param- header (bound to
// parameters by a tool's schema) leaves the request to the SDK.
func fastHeaders(r *http.Request) bool {
	hd := r.Header
	if r.Method != http.MethodPost || !only(hd, "Mcp-Protocol-Version", Stateless) || !only(hd, "Mcp-Method", "tools/call") ||
		len(hd.Values("Mcp-Name")) != 1 || hd.Get("Mcp-Name") == "" || len(hd.Values("Last-Event-Id")) > 0 {
		return false
	}
	if ct := hd.Values("Content-Type"); len(ct) != 1 {
		return false
	} else if mt, _, err := mime.ParseMediaType(ct[0]); err != nil || mt != "application/json" {
		return false
	}
	var jsonOK, streamOK bool
	for _, v := range hd.Values("Accept") {
		for _, tok := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(tok, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	if !jsonOK || !streamOK {
		return false
	}
	for k := range hd {
		if len(k) >= len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") {
			return false
		}
	}
	return true
}

// rebound reports whether r came to a loopback address under a Host that is not one: what a
// page served from elsewhere sends after rebinding its name to 127.0.0.1, which the SDK
// refuses (403) for a server on loopback. Its rule, which fastCall leaves to it.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopback(local.String()) && !loopback(r.Host)
}

// loopback reports whether a host, with or without a port, is localhost or a loopback address.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// only reports whether header k has exactly the one value v.
func only(hd http.Header, k, v string) bool {
	vs := hd.Values(k)
	return len(vs) == 1 && vs[0] == v
}

// fastRequest is a tools/call as fastCall reads it.
type fastRequest struct {
	id         jsonrpc.ID
	name       string
	args       json.RawMessage // as received, nil when absent
	meta       mcpsdk.Meta
	clientInfo bool // _meta names the client
}

// The members of a fast tools/call's _meta: the revision's three, and capgate's handle.
var fastMeta = map[string]bool{
	mcpsdk.MetaKeyProtocolVersion: true, mcpsdk.MetaKeyClientCapabilities: true, mcpsdk.MetaKeyClientInfo: true, HandleMeta: true,
}

// parseFastCall reads body as one JSON-RPC tools/call of the tool name (the Mcp-Name header),
// under capgate's strict JSON rules (no duplicate names, valid UTF-8, bounded depth): exactly
// the members jsonrpc "2.0", id (a string, or an integer of at most 15 digits, which the SDK
// reads back as the same number), method and params; params exactly name (the header's),
// _meta and, optionally, arguments; _meta the revision's protocolVersion (2026-07-28), its
// clientCapabilities (an object), optionally clientInfo (an object) and capgate's handle.
func parseFastCall(body []byte, name string) (fastRequest, bool) {
	var f fastRequest
	v, err := jcs.Parse(body, &jcs.Options{MaxDepth: MaxArgumentDepth + 2, MaxBytes: maxRequestBytes})
	if err != nil || v.Kind != jcs.Object || len(v.Members) != 4 {
		return f, false
	}
	for _, m := range v.Members {
		ok := false
		switch m.Name {
		case "jsonrpc":
			ok = m.Value.Kind == jcs.String && m.Value.Str == "2.0"
		case "id":
			f.id, ok = fastID(m.Value)
		case "method":
			ok = m.Value.Kind == jcs.String && m.Value.Str == "tools/call"
		case "params":
			ok = f.params(m.Value, name)
		}
		if !ok {
			return f, false
		}
	}
	if f.args != nil {
		// The arguments exactly as received, as the SDK hands them to the handler: the
		// strict reading above has already refused what the two readers could read apart.
		var raw struct {
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &raw) != nil || raw.Params.Arguments == nil {
			return f, false
		}
		f.args = raw.Params.Arguments
	}
	return f, true
}

// params reads a fast tools/call's params into f.
func (f *fastRequest) params(v jcs.Value, name string) bool {
	if v.Kind != jcs.Object {
		return false
	}
	var sawName, sawMeta bool
	for _, m := range v.Members {
		switch m.Name {
		case "name":
			if m.Value.Kind != jcs.String || m.Value.Str != name {
				return false
			}
			f.name, sawName = name, true
		case "arguments":
			f.args = json.RawMessage{} // read as received by parseFastCall
		case "_meta":
			if m.Value.Kind != jcs.Object {
				return false
			}
			for _, mm := range m.Value.Members {
				if !fastMeta[mm.Name] {
					return false
				}
			}
			ver, _ := m.Value.Get(mcpsdk.MetaKeyProtocolVersion)
			caps, _ := m.Value.Get(mcpsdk.MetaKeyClientCapabilities)
			info, hasInfo := m.Value.Get(mcpsdk.MetaKeyClientInfo)
			if ver.Kind != jcs.String || ver.Str != Stateless || caps.Kind != jcs.Object || (hasInfo && info.Kind != jcs.Object) {
				return false
			}
			f.meta, f.clientInfo, sawMeta = m.Value.Interface().(map[string]any), hasInfo, true
		default:
			return false
		}
	}
	return sawName && sawMeta
}

// fastID reads a JSON-RPC id as the SDK does (a string, or a number it keeps as an int64),
// taking only the numbers it reads back unchanged: integers of at most 15 digits.
func fastID(v jcs.Value) (jsonrpc.ID, bool) {
	switch v.Kind {
	case jcs.String:
		id, err := jsonrpc.MakeID(v.Str)
		return id, err == nil
	case jcs.Number:
		digits := strings.TrimPrefix(v.Num, "-")
		if digits == "" || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) || strings.Trim(digits, "0123456789") != "" {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(v.Float)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

// resultJSON encodes a tool's result as the SDK's stateless server does under 2026-07-28:
// content [] rather than null when there is none and no input request, the server named in
// _meta (SEP-2575), resultType "complete" or "input_required" (which the SDK sets in a field
// of its own, encoded after the result's members and before inputRequests), with the SDK's
// encoder (no HTML escaping outside the result's own encoding).
func resultJSON(res *mcpsdk.CallToolResult, impl *mcpsdk.Implementation) (json.RawMessage, error) {
	if res == nil {
		return nil, errors.New("no result")
	}
	r := *res
	if r.Content == nil && r.InputRequests == nil {
		r.Content = []mcpsdk.Content{}
	}
	meta := make(mcpsdk.Meta, len(r.Meta)+1)
	for k, v := range r.Meta {
		meta[k] = v
	}
	if _, ok := meta[mcpsdk.MetaKeyServerInfo]; !ok {
		meta[mcpsdk.MetaKeyServerInfo] = impl
	}
	r.Meta = meta
	b, err := encode(&r)
	if err != nil {
		return nil, err
	}
	kind, tail := "complete", []byte("}")
	if r.InputRequests != nil {
		ir, err := encode(r.InputRequests)
		if err != nil {
			return nil, err
		}
		kind, tail = "input_required", append(append([]byte(`,"inputRequests":`), ir...), '}')
	}
	head, ok := bytes.CutSuffix(b, tail)
	if !ok || len(head) < 2 {
		return nil, errors.New("the SDK's encoding of a result is not the one expected")
	}
	out := append(head[:len(head):len(head)], `,"resultType":"`+kind+`"`...)
	return append(out, tail...), nil
}

// encode is JSON as the SDK's JSON-RPC layer encodes it: no HTML escaping, no newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeEvent writes one JSON-RPC response as the SDK's stateless server answers a call: an
// event stream of one message event, flushed.
func writeEvent(w http.ResponseWriter, resp *jsonrpc.Response) {
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, "the answer could not be encoded", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	buf := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	buf = append(append(append(buf, "event: message\ndata: "...), data...), "\n\n"...)
	_, _ = w.Write(buf)
	_ = http.NewResponseController(w).Flush()
}

// paramHeadersIn reports whether a JSON Schema has a member named x-mcp-header (in any
// spelling of its case) anywhere: the SDK then binds parameters to Mcp-Param- headers and
// checks them, which fastCall leaves to it. A schema it cannot read counts as having one.
func paramHeadersIn(schema json.RawMessage) bool {
	v, err := jcs.Parse(schema, nil)
	if err != nil {
		return true
	}
	return hasMember(v, "x-mcp-header")
}

func hasMember(v jcs.Value, name string) bool {
	for _, it := range v.Items {
		if hasMember(it, name) {
			return true
		}
	}
	for _, m := range v.Members {
		if strings.EqualFold(m.Name, name) || hasMember(m.Value, name) {
			return true
		}
	}
	return false
}
