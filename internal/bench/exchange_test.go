package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/ipc"
)

// The load phase's calls go through the public client. BenchmarkExchange measures what that
// adds to the measured path against the exchange the benchmark wrote by hand before it (kept
// below, only for this): the same call, envelope and answer, through the same http.Client,
//
//   - "loopback": to the floor's handler over loopback HTTP on one keep-alive connection, as
//     the load phase and its floor send them;
//   - "in memory": to a transport that answers in the process, so that only the two sides'
//     own work is left: building the envelope, reading and checking the answer.
//
// Run: go test ./internal/bench -run '^$' -bench Exchange -benchmem
func BenchmarkExchange(b *testing.B) {
	tok := "cgt1." + strings.Repeat("A", 600) // the size of a settings.read token
	key := "cgk_" + strings.Repeat("k", 43)
	srv := httptest.NewServer(http.HandlerFunc(floorHandler))
	defer srv.Close()
	for _, where := range []struct {
		name string
		hc   *http.Client
		url  string
	}{
		{"loopback", srv.Client(), srv.URL},
		{"in memory", &http.Client{Transport: inMemory{}}, "http://floor"},
	} {
		b.Run(where.name+"/hand-written", func(b *testing.B) {
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				if err := callOnce(ctx, where.hc, where.url+"/v1/ipc", key, envelope("b0-"+strconv.Itoa(i), tok)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(where.name+"/client", func(b *testing.B) {
			ctx := context.Background()
			c, err := client.New(&client.Options{Server: where.url, Key: key, HTTPClient: where.hc})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				if _, err := c.Query(ctx, getSetting("b0-"+strconv.Itoa(i), tok)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// inMemory answers every request as the floor's handler does, without a network.
type inMemory struct{}

func (inMemory) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	floorHandler(w, r)
	return w.Result(), nil
}

// envelope is the llm_request for settings.get_setting under tok, as the load phase built it
// by hand before the client.
func envelope(requestID, tok string) []byte {
	b := make([]byte, 0, 256+len(tok))
	b = append(b, `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"`...)
	b = append(b, requestID...)
	b = append(b, `"},"body":{"action":"query","app":"settings","method":"get_setting","params":{"category":"display","key":"brightness"},"capability_token":"`...)
	b = append(b, tok...)
	b = append(b, `"}}`...)
	return b
}

// callOnce posts one call and checks that it succeeded, as the load phase did by hand
// before the client.
func callOnce(ctx context.Context, hc *http.Client, url, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, ipc.MaxEnvelopeBytes))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	var out struct {
		Body struct {
			Status    string `json:"status"`
			ErrorCode string `json:"error_code"`
		} `json:"body"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	if out.Body.Status != "success" {
		return fmt.Errorf("the call failed: %s", out.Body.ErrorCode)
	}
	return nil
}
