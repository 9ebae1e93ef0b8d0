package providers_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/manifest"
)

// A provider asks the host for credentials through HostService: an intent its capability does
// not declare is refused as permission_denied, in whatever spelling, and told to
// OnCredential without the provider's text; a declared one gets no handle yet, with a reason
// that says why. Never credential material.
func TestRequestCredential(t *testing.T) {
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	type told struct {
		capability, intent string
		declared           bool
	}
	var mu sync.Mutex
	var heard []told
	p := providers.Start(providers.Config{Manifest: doc, Command: testProvider(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnCredential: func(c, i string, d bool) {
			mu.Lock()
			heard = append(heard, told{c, i, d})
			mu.Unlock()
		}})
	defer p.Close()
	if up, why := settled(t, p); !up {
		t.Fatalf("not up: %v", why)
	}
	ask := func(intent string) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(map[string]string{"credential": intent})
		res, _, err := call(t, p, "tools.org.example.echo.echo", string(raw), false)
		if err != nil {
			t.Fatalf("echo asking for %q: %v", intent, err)
		}
		var out map[string]any
		_ = json.Unmarshal(res.Data, &out)
		return out
	}
	for _, intent := range []string{"scm.github.api", "ECHO.API", "echo.api ", "echo.api\x00", "echo.*", "", "../echo.api"} {
		if intent == "" {
			continue
		}
		out := ask(intent)
		if out["handle"] != "" || !strings.HasPrefix(out["credential_error"].(string), "permission_denied: the capability does not declare") {
			t.Errorf("an undeclared intent %q: %v", intent, out)
		}
	}
	out := ask("echo.api")
	if out["handle"] != "" || !strings.Contains(out["credential_error"].(string), "no credential handle") {
		t.Errorf("a declared intent: %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 7 || heard[6] != (told{"tools.org.example.echo.echo", "echo.api", true}) {
		t.Fatalf("OnCredential heard %+v", heard)
	}
	for _, h := range heard[:6] {
		if h.declared || h.intent != "" || h.capability != "tools.org.example.echo.echo" {
			t.Errorf("an undeclared request was told as %+v", h)
		}
	}
}
