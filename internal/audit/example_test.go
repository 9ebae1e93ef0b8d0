package audit

import (
	"context"
	"crypto/ed25519"
	"fmt"
)

// A writer appends records and signs a checkpoint at Close; Verify proves the log against
// the public key.
func Example() {
	ctx := context.Background()
	var s memAudit // any store.Audit: the gateway passes its SQLite or PostgreSQL store
	seed := make([]byte, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)

	w := NewWriter(&s, &Options{CheckpointKey: key, CheckpointEvery: 1000})
	ph, _ := ParamsHash([]byte(`{"command":"ps"}`))
	seq, err := w.Append(ctx, Record{
		Kind: KindDecision, Decision: DecisionAllow,
		Action: "execute", App: "terminal", Method: "execute_command", ParamsHash: ph,
		ClientID: "cl_agent", Capability: "app.com.example.terminal.execute_command",
	})
	if err != nil {
		fmt.Println("refuse the call:", err)
		return
	}
	fmt.Println("recorded at seq", seq)
	if err := w.Close(); err != nil {
		fmt.Println(err)
	}

	rep, err := Verify(ctx, &s, key.Public().(ed25519.PublicKey))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("entries:", rep.Entries, "checkpoint at:", rep.LastCheckpointSeq, "ok:", rep.OK())
	// Output:
	// recorded at seq 1
	// entries: 1 checkpoint at: 1 ok: true
}
