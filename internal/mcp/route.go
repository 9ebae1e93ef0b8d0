package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionless reports whether r is a request of the sessionless revision (2026-07-28 or a
// later one): its MCP-Protocol-Version header says so, or, without that header or with an
// older one, a message of its body carries the revision's per-request _meta version, so that
// the revision's own checks refuse the mismatch (HTTP 400, -32020) rather than a session
// taking it. ok is false when the body could not be read (the session handler then answers).
// A body it reads is put back for the handler.
func sessionless(r *http.Request) (stateless, ok bool) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= Stateless {
		return true, true
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false, true
	}
	body, err := readBack(r)
	if err != nil {
		return false, false
	}
	return carriesRequestMeta(body), true
}

// readBack reads r's body up to one byte past the limit the SDK sets, and puts what it read
// back in front of the rest, so that the handler after it reads the body whole (and refuses
// one past its limit), a read error included.
func readBack(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// carriesRequestMeta reports whether a JSON-RPC message, or a batch of them, has a params
// _meta naming a protocol version: the sessionless revision's per-request version.
func carriesRequestMeta(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !strings.Contains(string(body), mcpsdk.MetaKeyProtocolVersion) {
		return false
	}
	type msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	var msgs []msg
	if body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return false
		}
	} else {
		var m msg
		if json.Unmarshal(body, &m) != nil {
			return false
		}
		msgs = []msg{m}
	}
	for _, m := range msgs {
		if _, ok := m.Params.Meta[mcpsdk.MetaKeyProtocolVersion]; ok {
			return true
		}
	}
	return false
}
