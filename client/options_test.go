package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/client/wire"
)

// The secret every test below hides somewhere an attacker would look for it.
const secret = "cgk_SECRETSECRETSECRET0123456789abcdefghijkl"

// Options are checked at New: each error names the option and its rule, never its value.
func TestOptionsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		o     client.Options
		field string
	}{
		"no scheme":                {client.Options{Server: "127.0.0.1:7766"}, "Options.Server"},
		"a scheme not http":        {client.Options{Server: "ftp://" + secret + "/"}, "Options.Server"},
		"no host":                  {client.Options{Server: "http:///v1"}, "Options.Server"},
		"opaque":                   {client.Options{Server: "http:" + secret}, "Options.Server"},
		"user info":                {client.Options{Server: "http://me:" + secret + "@127.0.0.1:7766"}, "Options.Server"},
		"a query":                  {client.Options{Server: "http://127.0.0.1:7766/?k=" + secret}, "Options.Server"},
		"a fragment":               {client.Options{Server: "http://127.0.0.1:7766/#" + secret}, "Options.Server"},
		"not a URL":                {client.Options{Server: "http://[" + secret}, "Options.Server"},
		"a key with a space":       {client.Options{Key: secret + " x"}, "Options.Key"},
		"a key with a newline":     {client.Options{Key: secret + "\r\nX-Evil: 1"}, "Options.Key"},
		"a key with a NUL":         {client.Options{Key: secret + "\x00"}, "Options.Key"},
		"a key with inner padding": {client.Options{Key: "cgk_ab=cd" + secret}, "Options.Key"},
		"a key of only padding":    {client.Options{Key: "=="}, "Options.Key"},
		"a key not ASCII":          {client.Options{Key: secret + "é"}, "Options.Key"},
		"a negative timeout":       {client.Options{Timeout: -time.Second}, "Options.Timeout"},
		"socket and server":        {client.Options{Socket: "/run/capgate.sock", Server: "http://127.0.0.1:7766"}, "Options.Server"},
		"socket and http client":   {client.Options{Socket: "/run/capgate.sock", HTTPClient: http.DefaultClient}, "Options.HTTPClient"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := client.New(&tc.o)
			if err == nil {
				t.Fatalf("New took it: %v", c)
			}
			var oe *client.OptionError
			if !errors.As(err, &oe) || "Options."+oe.Option != tc.field || !strings.HasPrefix(err.Error(), "client: "+tc.field+": ") ||
				strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q does not name %s, or holds the value", err, tc.field)
			}
		})
	}
	for _, o := range []*client.Options{nil, {}, {Server: "https://gateway.example:8443/capgate/"}, {Key: "cgk_a-b.c_d~e+f/g=="}, {Socket: "/run/capgate.sock"}} {
		if _, err := client.New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
}

// A Client and a Token print without the key or the token, however they are printed.
func TestNoSecretInStrings(t *testing.T) {
	c, err := client.New(&client.Options{Key: secret})
	if err != nil {
		t.Fatal(err)
	}
	tok := client.Token{Wire: "cgt1." + secret, ID: "cap_1"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok),
		fmt.Sprintf("%v %+v %#v", &tok, &tok, &tok)} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("printed: %s", s)
		}
	}
	if fmt.Sprint(c) != "capgate client of "+client.DefaultServer {
		t.Errorf("String() = %q", fmt.Sprint(c))
	}
}

// Answers that are not the API's are a *ProtocolError, never an *Error, whatever they hold;
// a redirect is not followed, so the capability token in the body goes nowhere else.
func TestProtocolErrors(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	answers := map[string]http.HandlerFunc{
		"404 text":            func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"200 text":            func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") },
		"200 array":           func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "[1]") },
		"200 not an envelope": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"success"}`) },
		"an envelope of another version": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"2.0","request_id":""},"body":{"status":"error","error_code":"X","error_message":"x"}}`)
		},
		"an error without a code": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"1.0"},"body":{"status":"error","error_message":"x"}}`)
		},
		"a code not in the API's form": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"1.0"},"body":{"status":"error","error_code":"`+secret+`"}}`)
		},
		"a success for another request": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"1.0","request_id":"someone-else"},"body":{"status":"success","result":{}}}`)
		},
		"a success with 401": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"1.0","request_id":""},"body":{"status":"success","result":{}}}`)
		},
		"500 with a flat error": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, `{"status":"error","error_code":"EXECUTION_FAILED","error_message":"x"}`)
		},
		"a redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		},
		"too large": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"header":{"msg_type":"llm_response","version":"1.0"},"body":{"status":"error","error_code":"X","error_message":"`)
			w.Write(make([]byte, client.MaxAnswerBytes))
			io.WriteString(w, `"}}`)
		},
	}
	for name, h := range answers {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			c, err := client.New(&client.Options{Server: srv.URL, Key: secret})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Call(context.Background(), client.Call{App: "desk", Method: "read", Token: "cgt1." + secret})
			var pe *client.ProtocolError
			if !errors.As(err, &pe) || pe.Endpoint != "POST /v1/ipc" || client.CodeOf(err) != "" {
				t.Fatalf("Call: %v (%T), want a *ProtocolError", err, err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error holds a secret: %v", err)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("a redirect was followed %d times", n)
	}
}

// No error holds the client key or a token the request carried: not the transport's, not
// the gateway's, not one from a server that repeats in its answer what it was sent.
func TestNoSecretInErrors(t *testing.T) {
	t.Parallel()
	tok := "cgt1.TOKENSECRET" + strings.Repeat("x", 40)
	// A server that repeats the request, headers and body, in every answer it gives.
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		said, _ := json.Marshal(r.Header.Get("Authorization") + " " + string(body))
		if r.URL.Path == "/v1/ipc" {
			fmt.Fprintf(w, `{"header":{"msg_type":"llm_response","version":"1.0"},"body":{"status":"error","error_code":"EXECUTION_FAILED","error_message":%s,"details":{"said":%s}}}`, said, said)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"status":"error","error_code":"INVALID_TOKEN","error_message":%s}`, said)
	}))
	defer mirror.Close()
	// A port nobody listens on, and one that takes connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	s := newServed(t, serveOptions{})

	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var errs []error
	for _, server := range []string{mirror.URL, closed, "http://" + mute.Addr().String(), s.url} {
		c, err := client.New(&client.Options{Server: server, Key: secret, Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, cx := range []context.Context{ctx, cancelled} {
			_, err := c.Call(cx, client.Call{App: "desk", Method: "read", Token: tok, Params: map[string]string{"id": "1"}})
			errs = append(errs, err)
			_, err = c.Undo(cx, tok)
			errs = append(errs, err)
			_, err = c.Explain(cx, client.Call{App: "desk", Method: "read", Token: tok})
			errs = append(errs, err)
			_, err = c.Derive(cx, client.DeriveRequest{Parent: tok, Capabilities: []string{"app.desk.read"}})
			errs = append(errs, err)
			_, err = c.Revoke(cx, tok)
			errs = append(errs, err)
			_, err = c.RequestCapability(cx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Minute,
				ConstraintsJSON: json.RawMessage(`{"condition":"true"}`)})
			errs = append(errs, err)
			_, err = c.Capabilities(cx)
			errs = append(errs, err)
		}
	}
	// Params and constraints the client cannot send.
	c := mustNew(t, &client.Options{Server: s.url, Key: secret})
	_, err = c.Call(ctx, client.Call{App: "desk", Method: "read", Params: json.RawMessage(`{"id":"` + tok + `"`)})
	errs = append(errs, err)
	_, err = c.Call(ctx, client.Call{App: "desk", Method: "read", Params: map[string]any{tok: func() {}}})
	errs = append(errs, err)
	_, err = c.RequestCapability(ctx, client.TokenRequest{Duration: time.Minute, ConstraintsJSON: json.RawMessage(tok)})
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("error %d: none", i)
			continue
		}
		var e *client.Error
		for _, text := range []string{err.Error(), fmt.Sprintf("%v %+v", err, err)} {
			if strings.Contains(text, "SECRET") {
				t.Errorf("error %d (%T) holds a secret: %s", i, err, text)
			}
		}
		if errors.As(err, &e) && (strings.Contains(e.Message, "SECRET") || strings.Contains(e.Code, "SECRET")) {
			t.Errorf("error %d: the message holds a secret: %q", i, e.Message)
		}
	}
	// The mirror's answers were read as errors all the same, with the secrets taken out.
	if e := (*client.Error)(nil); !errors.As(errs[0], &e) || e.Code != wire.CodeExecutionFailed || !strings.Contains(e.Message, "[redacted]") {
		t.Errorf("the mirror's answer: %v", errs[0])
	}
}
