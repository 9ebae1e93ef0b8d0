package gateway

import (
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// A provider's sandbox shows every capability's filesystem intents and takes the largest
// budget of each kind; a budget capgate cannot enforce refuses the start, naming it.
func TestSandboxOf(t *testing.T) {
	doc := func(budgets string) *manifest.Document {
		t.Helper()
		d, err := manifest.Load([]byte(`{"app_id":"org.example.b","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"x.org.example.b.a","name":"A","description":"A.","category":"TEXT_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read",
  "filesystem_intents":[{"path":"/sandbox/a"}],"resource_budget":{"memory_bytes":1000000,"processes":8}},
 {"id":"x.org.example.b.b","name":"B","description":"B.","category":"TEXT_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read",
  "filesystem_intents":[{"path":"/sandbox/b","mode":"read_write"}],"resource_budget":` + budgets + `}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	intents, limits, err := sandboxOf(doc(`{"memory_bytes":2000000,"open_files":64}`), nil)
	if err != nil || len(intents) != 2 || limits.MemoryBytes != 2000000 || limits.Processes != 8 || limits.OpenFiles != 64 {
		t.Errorf("intents %v limits %+v %v", intents, limits, err)
	}
	// Under the host policy's ceiling.
	if _, limits, _ := sandboxOf(doc(`{"memory_bytes":2000000}`), map[string]int64{"memory_bytes": 1500000, "processes": 4}); limits.MemoryBytes != 1500000 || limits.Processes != 4 {
		t.Errorf("under a ceiling: %+v", limits)
	}
	if _, _, err := sandboxOf(doc(`{"gpu_hours":1}`), nil); err == nil || !strings.Contains(err.Error(), "capabilities[1].resource_budget.gpu_hours") {
		t.Errorf("an unenforceable budget: %v", err)
	}
}
