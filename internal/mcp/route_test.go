package mcp

import (
	"strings"
	"testing"
)

func TestCarriesRequestMeta(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true},
		{`[{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":2,"method":"y","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, false},
		{``, false},
		{`not json io.modelcontextprotocol/protocolVersion`, false},
	} {
		if got := carriesRequestMeta([]byte(tc.body)); got != tc.want {
			t.Errorf("carriesRequestMeta(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

// FuzzCarriesRequestMeta: whatever a client sends, the router does not panic, and it sends a
// body to the sessionless revision only when the body names the revision's _meta key.
func FuzzCarriesRequestMeta(f *testing.F) {
	f.Add([]byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`[{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}]`))
	f.Add([]byte(`{"params":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if carriesRequestMeta(body) && !strings.Contains(string(body), `io.modelcontextprotocol/protocolVersion`) {
			t.Errorf("routed to 2026-07-28 without its _meta key: %q", body)
		}
	})
}

// FuzzValidHandle: a handle capgate takes has exactly its own form, and every handle it makes
// is one it takes.
func FuzzValidHandle(f *testing.F) {
	f.Add(newHandle())
	f.Add("cgh_")
	f.Add("cgh_" + strings.Repeat("A", 32))
	f.Fuzz(func(t *testing.T, s string) {
		if validHandle(s) && (len(s) != len(handlePrefix)+32 || !strings.HasPrefix(s, handlePrefix) || strings.ToLower(s) != s) {
			t.Errorf("validHandle(%q) = true", s)
		}
		if h := newHandle(); !validHandle(h) {
			t.Errorf("newHandle() = %q, which validHandle refuses", h)
		}
	})
}
