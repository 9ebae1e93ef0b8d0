package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// The catalog is a list of names, or a map of names to where the secret comes from, where it
// may go and how; every rule broken is named by its field path.
func TestCredentials(t *testing.T) {
	f, err := Parse([]byte("credentials: [kb.search.api, scm.github.api]\n"))
	if err != nil || strings.Join(f.Credentials.Names(), ",") != "kb.search.api,scm.github.api" || f.Credentials["kb.search.api"] != nil {
		t.Fatalf("the list form: %+v %v", f.Credentials, err)
	}
	f, err = Parse([]byte(`credentials:
  kb.search.api:
    from_env: KB_TOKEN
    destinations: ["kb.example.com:443", "[2001:db8::1]:8443"]
    header: "Authorization: Bearer {secret}"
  scm.github.api:
    from_file: secrets/github
    destinations: ["api.github.com:443"]
    header: "Authorization: token {secret}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Credentials["kb.search.api"]; c == nil || c.FromEnv != "KB_TOKEN" || len(c.Destinations) != 2 {
		t.Errorf("the map form: %+v", c)
	}
	f.Credentials.resolveFiles("/etc/capgate")
	if got := f.Credentials["scm.github.api"].FromFile; got != filepath.Join("/etc/capgate", "secrets/github") {
		t.Errorf("from_file relative to the file: %s", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"credentials: [Bad]", "intent name"},
		{"credentials: [a.b, a.b]", "credentials[1]: named twice"},
		{"credentials: {a.b: {from_env: X, from_file: /y, destinations: [\"h.example:1\"], header: \"A: {secret}\"}}", "credentials.a.b: exactly one"},
		{"credentials: {a.b: {destinations: [\"h.example:1\"], header: \"A: {secret}\"}}", "credentials.a.b: exactly one"},
		{"credentials: {a.b: {from_env: CAPGATE_KEY, destinations: [\"h.example:1\"], header: \"A: {secret}\"}}", "credentials.a.b.from_env"},
		{"credentials: {a.b: {from_env: 'X Y', destinations: [\"h.example:1\"], header: \"A: {secret}\"}}", "credentials.a.b.from_env"},
		{"credentials: {a.b: {from_env: X, header: \"A: {secret}\"}}", "credentials.a.b.destinations: required"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example\"], header: \"A: {secret}\"}}", "credentials.a.b.destinations[0]: must be HOST:PORT"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:0\"], header: \"A: {secret}\"}}", "destinations[0]: the port"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:0443\"], header: \"A: {secret}\"}}", "destinations[0]: the port"},
		{"credentials: {a.b: {from_env: X, destinations: [\"H.example:443\"], header: \"A: {secret}\"}}", "destinations[0]: the host"},
		{"credentials: {a.b: {from_env: X, destinations: [\"*.example:443\"], header: \"A: {secret}\"}}", "destinations[0]: the host"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:443\"], header: \"A: Bearer\"}}", "credentials.a.b.header: the value must hold {secret} once"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:443\"], header: \"A: {secret}{secret}\"}}", "once"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:443\"], header: \"Bad Name: {secret}\"}}", "header name"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:443\"], header: \"A: {secret}\\r\\nX: y\"}}", "one line"},
		{"credentials: {a.b: {from_env: X, destinations: [\"h.example:443\"], header: \"A: {secret}\", secret: hunter2}}", "unknown field"},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error echoes a value: %v", tc.in, err)
		}
	}
}
