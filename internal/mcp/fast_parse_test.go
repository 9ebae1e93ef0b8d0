package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const fastSeed = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo__say","arguments":{"text":"hi"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// FuzzParseFastCall: whatever a client sends, the fast path's reader does not panic, and what
// it takes the SDK reads the same way: one tools/call request with the same id, of the tool
// the Mcp-Name header names, with the same arguments byte for byte, under 2026-07-28.
func FuzzParseFastCall(f *testing.F) {
	f.Add([]byte(fastSeed), "echo__say")
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`), "a")
	f.Add([]byte(`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"a","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), "a")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"a","arguments":[],"_meta":{}}}`), "a")
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		got, ok := parseFastCall(body, name)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("taken, and the SDK cannot read it: %v\n%q", err, body)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || req.Method != "tools/call" || req.ID != got.id || !req.ID.IsValid() {
			t.Fatalf("taken as a call with id %v, which the SDK reads as %#v\n%q", got.id, msg, body)
		}
		var p mcpsdk.CallToolParamsRaw
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Fatalf("taken, and its params do not decode: %v\n%q", err, body)
		}
		if p.Name != name || got.name != name || !bytes.Equal(p.Arguments, got.args) {
			t.Fatalf("taken as %q(%s), read as %q(%s)\n%q", got.name, got.args, p.Name, p.Arguments, body)
		}
		if v, _ := p.Meta[mcpsdk.MetaKeyProtocolVersion].(string); v != Stateless || got.meta[mcpsdk.MetaKeyProtocolVersion] != Stateless {
			t.Fatalf("taken under %v\n%q", p.Meta[mcpsdk.MetaKeyProtocolVersion], body)
		}
	})
}

// The ids the fast path takes are those the SDK reads back unchanged.
func TestFastID(t *testing.T) {
	for body, want := range map[string]bool{
		`1`: true, `0`: true, `-7`: true, `999999999999999`: true, `"x"`: true, `""`: true,
		`1234567890123456`: false, `1.5`: false, `1.0`: false, `1e2`: false, `-0`: true, `01`: false, `null`: false, `true`: false, `[]`: false, `{}`: false,
	} {
		b := []byte(fastSeed[:len(`{"jsonrpc":"2.0","id":`)] + body + fastSeed[len(`{"jsonrpc":"2.0","id":1`):])
		if _, ok := parseFastCall(b, "echo__say"); ok != want {
			t.Errorf("id %s: taken %v, want %v", body, ok, want)
		}
	}
}
