package mcp_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/mcp"
)

// rawAnswer is an HTTP answer as a client receives it, less its Date.
type rawAnswer struct {
	status int
	header http.Header
	body   string
}

func rawPost(t *testing.T, url, key string, header map[string][]string, body string) rawAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if h := header["Host"]; len(h) == 1 {
		req.Host = h[0]
	}
	for k, vs := range header {
		if k == "Host" {
			continue
		}
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err) // not Fatal: TestFastCallsAtOnce posts from goroutines of its own
		return rawAnswer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
		return rawAnswer{}
	}
	resp.Header.Del("Date")
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// perCall are the parts of an answer that differ from one call to the next, or between the
// two handlers: the call's id, a consent request's, the server's address.
var perCall = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+|(call|req)_[0-9a-f]+`)

func (a rawAnswer) String() string {
	return perCall.ReplaceAllString(a.body, "…")
}

// A 2026-07-28 tools/call of a capability is answered without the SDK's session per request
// (fast.go), and the answer must be the SDK's, byte for byte but for what differs between
// any two calls (their ids): the same status, headers and event stream, for successes,
// refusals, input requests and every spelling of the request the fast path takes. Every
// request it does not take must reach the SDK as sent, body included, and get the SDK's
// answer: a mismatch of headers, members it does not know, capgate's own tools, what the SDK
// refuses. Each request goes to two handlers on one gateway, one of them SDKOnly.
func TestFastCallAnswersAsTheSDK(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 50*time.Millisecond)
	key := e.addClient("alice", "user", false)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	front := &ipc.Server{Broker: e.g.Broker, Clients: e.g.Store, Tokens: e.g.Store, Audit: e.g.Audit, Registry: e.g.Registry, Logger: quiet}
	opts := mcp.Options{Broker: e.g.Broker, Registry: e.g.Registry, Holdings: e.g.Store, Audit: e.g.Audit, Authenticate: front.Authenticate, Logger: quiet}
	fast := mcp.NewHandler(opts)
	opts.SDKOnly = true
	sdkOnly := mcp.NewHandler(opts)
	fastSrv, sdkSrv := httptest.NewServer(fast), httptest.NewServer(sdkOnly)
	t.Cleanup(fastSrv.Close)
	t.Cleanup(sdkSrv.Close)

	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	const ver = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	metaOf := func(extra ...string) string {
		return `"_meta":{` + strings.Join(append([]string{ver, caps}, extra...), ",") + `}`
	}
	call := func(id, tool, args string, meta ...string) string {
		params := `"name":"` + tool + `",` + metaOf(meta...)
		if args != "" {
			params += `,"arguments":` + args
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
	}
	hdr := func(tool string, extra ...string) map[string][]string {
		h := map[string][]string{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {mcp.Stateless}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = append(h[extra[i]], extra[i+1])
		}
		return h
	}
	with := func(h map[string][]string, k string, vs ...string) map[string][]string {
		h[k] = vs
		return h
	}
	say, write := `{"text":"hi"}`, `{"path":"a.txt","content":"x"}`
	for _, tc := range []struct {
		name   string
		header map[string][]string
		body   string
		fast   bool
	}{
		// Taken by the fast path.
		{"a call without a token", hdr("echo__say"), call("1", "echo__say", say), true},
		{"a string id with escapes", hdr("echo__say"), call(`"a\"b\u00e9\\"`, "echo__say", say), true},
		{"a negative id", hdr("echo__say"), call("-7", "echo__say", say), true},
		{"id 0", hdr("echo__say"), call("0", "echo__say", say), true},
		{"id of 15 digits", hdr("echo__say"), call("999999999999999", "echo__say", say), true},
		{"text the encoder could escape", hdr("echo__say"), call("2", "echo__say", `{"text":"<b>&amp;</b> \u2028 é \ud83d\ude00 \"q\""}`), true},
		{"arguments with spaces and numbers spelled otherwise", hdr("calc__compute"), call("3", "calc__compute", ` { "expression" : "1e2 + 0.10" } `), true},
		{"no arguments", hdr("echo__say"), call("4", "echo__say", ""), true},
		{"arguments null", hdr("echo__say"), call("5", "echo__say", "null"), true},
		{"arguments an array", hdr("echo__say"), call("6", "echo__say", "[1]"), true},
		{"arguments breaking the schema", hdr("echo__say"), call("7", "echo__say", `{"text":5,"extra":true}`), true},
		{"a dry run asked of a capability without one", hdr("echo__say"), call("8", "echo__say", `{"text":"hi","_dry_run":true}`), true},
		{"_dry_run not a boolean", hdr("echo__say"), call("9", "echo__say", `{"text":"hi","_dry_run":"yes"}`), true},
		{"a duplicate name in the arguments", hdr("echo__say"), call("10", "echo__say", `{"text":"a","text":"b"}`), false},
		{"a call that needs the person, no URL elicitation", hdr("files__write_file"), call("11", "files__write_file", write), true},
		{"a call that needs the person, URL elicitation: an input request", hdr("files__write_file"),
			strings.Replace(call("12", "files__write_file", write), caps, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}`, 1), true},
		{"a handle held by nobody", hdr("files__write_file"), call("13", "files__write_file", write, `"capgate/token_handle":"cgh_00000000000000000000000000000000"`), true},
		{"a handle that is not one", hdr("files__write_file"), call("14", "files__write_file", write, `"capgate/token_handle":"nope"`), true},
		{"clientInfo", hdr("echo__say"), call("15", "echo__say", say, `"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1","title":"Raw"}`), true},
		{"a charset and other media types accepted", with(hdr("echo__say"), "Accept", "text/event-stream;q=0.5", "application/json, */*"),
			call("16", "echo__say", say), true},
		{"Host localhost", hdr("echo__say", "Host", "localhost"), call("19", "echo__say", say), true},
		{"Content-Type with a charset", with(hdr("echo__say"), "Content-Type", "application/json; charset=utf-8"), call("17", "echo__say", say), true},
		{"the members in another order", hdr("echo__say"),
			`{"params":{"arguments":{"text":"hi"},` + metaOf() + `,"name":"echo__say"},"method":"tools/call","id":18,"jsonrpc":"2.0"}`, true},

		// Left to the SDK, which answers as it would anyway.
		{"a Host not loopback on a loopback server: a page that rebound its name", hdr("echo__say", "Host", "evil.example:80"), call("19", "echo__say", say), false},
		{"a Host of a loopback name that is not localhost", hdr("echo__say", "Host", "localhost.evil.example"), call("19", "echo__say", say), false},
		{"Mcp-Name names another tool", hdr("calc__compute"), call("20", "echo__say", say), false},
		{"Mcp-Name twice", with(hdr("echo__say"), "Mcp-Name", "echo__say", "echo__say"), call("21", "echo__say", say), false},
		{"an Mcp-Param- header", hdr("echo__say", "Mcp-Param-Text", "aGk="), call("22", "echo__say", say), false},
		{"a Last-Event-ID", hdr("echo__say", "Last-Event-ID", "x_1"), call("23", "echo__say", say), false},
		{"an older version header", with(hdr("echo__say"), "Mcp-Protocol-Version", "2025-11-25"), call("24", "echo__say", say), false},
		{"the version header twice", with(hdr("echo__say"), "Mcp-Protocol-Version", mcp.Stateless, mcp.Stateless), call("25", "echo__say", say), false},
		{"Accept without the event stream", with(hdr("echo__say"), "Accept", "application/json"), call("26", "echo__say", say), false},
		{"Content-Type text", with(hdr("echo__say"), "Content-Type", "text/plain"), call("27", "echo__say", say), false},
		{"a fractional id", hdr("echo__say"), call("1.5", "echo__say", say), false},
		{"an id of 16 digits", hdr("echo__say"), call("1234567890123456", "echo__say", say), false},
		{"an id with an exponent", hdr("echo__say"), call("1e2", "echo__say", say), false},
		{"a null id", hdr("echo__say"), call("null", "echo__say", say), false},
		{"a duplicate member in the message", hdr("echo__say"), strings.Replace(call("28", "echo__say", say), `"method"`, `"method":"tools/list","method"`, 1), false},
		{"a duplicate name", hdr("echo__say"), strings.Replace(call("29", "echo__say", say), `"name":"echo__say"`, `"name":"calc__compute","name":"echo__say"`, 1), false},
		{"another member in params", hdr("echo__say"), strings.Replace(call("30", "echo__say", say), `"name"`, `"requestState":"x","name"`, 1), false},
		{"input responses", hdr("echo__say"), strings.Replace(call("31", "echo__say", say), `"name"`, `"inputResponses":{},"name"`, 1), false},
		{"a progress token", hdr("echo__say"), call("32", "echo__say", say, `"progressToken":1`), false},
		{"no client capabilities", hdr("echo__say"), strings.Replace(call("33", "echo__say", say), ","+caps, "", 1), false},
		{"client capabilities of the wrong shape", hdr("echo__say"), strings.Replace(call("34", "echo__say", say), caps, `"io.modelcontextprotocol/clientCapabilities":{"roots":5}`, 1), false},
		{"clientInfo of the wrong shape", hdr("echo__say"), call("35", "echo__say", say, `"io.modelcontextprotocol/clientInfo":{"name":5}`), false},
		{"_meta of an older version", hdr("echo__say"), strings.Replace(call("36", "echo__say", say), "2026-07-28", "2025-11-25", 1), false},
		{"capgate's own tool", hdr("capgate__explain"), call("37", "capgate__explain", `{"capability":"echo__say"}`), false},
		{"a tool the client does not have", hdr("nope__x"), call("38", "nope__x", "{}"), false},
		{"a batch", hdr("echo__say"), "[" + call("39", "echo__say", say) + "]", false},
		{"a byte order mark", hdr("echo__say"), "\ufeff" + call("40", "echo__say", say), false},
		{"jsonrpc 1.0", hdr("echo__say"), strings.Replace(call("41", "echo__say", say), `"2.0"`, `"1.0"`, 1), false},
		{"not JSON", hdr("echo__say"), `{"jsonrpc":"2.0",`, false},
		{"an empty body", hdr("echo__say"), "", false},
		{"past the size limit", hdr("echo__say"), call("42", "echo__say", `{"text":"`+strings.Repeat("a", mcp.MaxArgumentBytes+70<<10)+`"}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mcp.FastAnswered(fast)
			got := rawPost(t, fastSrv.URL, key, tc.header, tc.body)
			taken := mcp.FastAnswered(fast) - before
			want := rawPost(t, sdkSrv.URL, key, tc.header, tc.body)
			if tc.fast != (taken == 1) {
				t.Errorf("answered by the fast path: %v, want %v", taken == 1, tc.fast)
			}
			if got.status != want.status || got.String() != want.String() {
				t.Errorf("the fast path's answer differs from the SDK's:\n got %d %q\nwant %d %q", got.status, got, want.status, want)
			}
			if len(got.header) != len(want.header) {
				t.Errorf("headers: got %v, want %v", got.header, want.header)
			}
			for k := range want.header {
				if !bytes.Equal([]byte(strings.Join(got.header[k], "\n")), []byte(strings.Join(want.header[k], "\n"))) {
					t.Errorf("header %s: got %q, want %q", k, got.header[k], want.header[k])
				}
			}
		})
	}
}

// Calls on the fast path at once, from one client and from two, share the warm session and
// its tools: every answer is its own call's (the text it sent), none is lost or crossed.
func TestFastCallsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	keys := []string{e.addClient("alice", "user", false), e.addClient("bob", "user", false)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	front := &ipc.Server{Broker: e.g.Broker, Clients: e.g.Store, Tokens: e.g.Store, Audit: e.g.Audit, Registry: e.g.Registry, Logger: quiet}
	fast := mcp.NewHandler(mcp.Options{Broker: e.g.Broker, Registry: e.g.Registry, Holdings: e.g.Store, Audit: e.g.Audit, Authenticate: front.Authenticate, Logger: quiet})
	srv := httptest.NewServer(fast)
	t.Cleanup(srv.Close)
	hdr := map[string][]string{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {mcp.Stateless}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo__say"}}
	const workers, each = 8, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("w%d-%d", w, i)
				body := `{"jsonrpc":"2.0","id":` + fmt.Sprint(i) + `,"method":"tools/call","params":{"name":"echo__say","arguments":{"text":"` + text + `"},` + meta + `}}`
				a := rawPost(t, srv.URL, keys[w%2], hdr, body)
				if a.status != http.StatusOK || !strings.Contains(a.body, `"structuredContent":{"text":"`+text+`"}`) {
					t.Errorf("%s: %d %s", text, a.status, a.body)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := mcp.FastAnswered(fast); n != workers*each {
		t.Errorf("the fast path answered %d of %d calls", n, workers*each)
	}
}
