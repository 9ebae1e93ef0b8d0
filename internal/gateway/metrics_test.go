package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The metrics answer under a loopback Host from this machine with no key, refuse any other
// Host (a rebound name) with 421, and from beyond the machine need a client key.
func TestMetricsAccess(t *testing.T) {
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	h := e.g.Handler()
	get := func(host, remote, key string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Host, r.RemoteAddr = host, remote
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusOK && !strings.Contains(w.Body.String(), "capgate_") {
			t.Errorf("metrics body: %.200s", w.Body.String())
		}
		return w.Code
	}
	for _, tc := range []struct {
		host, remote, key string
		want              int
	}{
		{"127.0.0.1:7766", "127.0.0.1:5000", "", http.StatusOK},
		{"localhost:7766", "[::1]:5000", "", http.StatusOK},
		{"[::1]:7766", "[::ffff:127.0.0.1]:5000", "", http.StatusOK},
		{"evil.example:7766", "127.0.0.1:5000", "", http.StatusMisdirectedRequest},
		{"evil.example", "127.0.0.1:5000", alice.Key, http.StatusMisdirectedRequest},
		{"127.0.0.1:7766", "203.0.113.7:5000", "", http.StatusUnauthorized},
		{"127.0.0.1:7766", "203.0.113.7:5000", "cgk_unknown", http.StatusUnauthorized},
		{"127.0.0.1:7766", "203.0.113.7:5000", alice.Key, http.StatusOK},
		{"127.0.0.1:7766", "10.0.0.2:5000", "", http.StatusUnauthorized},
	} {
		if got := get(tc.host, tc.remote, tc.key); got != tc.want {
			t.Errorf("Host %s from %s key %v: %d, want %d", tc.host, tc.remote, tc.key != "", got, tc.want)
		}
	}
}
