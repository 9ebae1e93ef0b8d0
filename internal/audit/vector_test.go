package audit

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// The vectors below were checked with tools independent of this package: the hashes with
// printf and sha256sum as doc.go shows, the signature with Python's cryptography package.
const (
	vecParams     = `{"timeout": 60000, "command": "ps"}`
	vecParamsHash = "sha256:5b410c8ce6f62a8b432077021de038ddeead8ca42db705bbfc2d39dc2b69d36d"
	vecBody1      = `{"action":"execute","app":"terminal","audit_tag":"Code compilation task","call_id":"call_1","capability":"app.com.example.terminal.execute_command","client_id":"cl_agent","code":"","consent_id":"","decision":"allow","duration_ms":0,"explanation":"","kind":"decision","method":"execute_command","params_hash":"sha256:5b410c8ce6f62a8b432077021de038ddeead8ca42db705bbfc2d39dc2b69d36d","permission":"app.terminal.execute","result":"","timestamp":1706620800,"token_id":"cap_1234567890abcdef"}`
	vecHash1      = "sha256:ee79f674ff7eb9e7e34616067ec1dae61579c9d4211798e4d6cdb4e7db923a01"
	vecBody2      = `{"action":"execute","app":"terminal","audit_tag":"Code compilation task","call_id":"call_1","capability":"app.com.example.terminal.execute_command","client_id":"cl_agent","code":"","consent_id":"","decision":"allow","duration_ms":42,"explanation":"","kind":"outcome","method":"execute_command","params_hash":"sha256:5b410c8ce6f62a8b432077021de038ddeead8ca42db705bbfc2d39dc2b69d36d","permission":"app.terminal.execute","result":"success","timestamp":1706620801,"token_id":"cap_1234567890abcdef"}`
	vecHash2      = "sha256:ba66f319cfd28103d5a9673a7315771564c32a084f75afadfce5286aad2091b7"
	// vecCheckpoint's signature covers "capgate audit checkpoint v2\x00" and the canonical
	// {"at","head","seq","version"}; vecLegacyCheckpoint's, written before versions, the
	// canonical {"at","head","seq"} alone.
	vecCheckpoint       = `{"at":"2024-01-30T13:20:01.5Z","head":"sha256:ba66f319cfd28103d5a9673a7315771564c32a084f75afadfce5286aad2091b7","seq":2,"signature":"ed25519:F4kIRWPw0npDPy71fL8njzrzTVlr5RTJgsizUpc28HAege4ymvhXCsMMpTTiZy+dgbxQ7XO8giUDGBJahZXSBg==","version":"2"}`
	vecLegacyCheckpoint = `{"at":"2024-01-30T13:20:01.5Z","head":"sha256:ba66f319cfd28103d5a9673a7315771564c32a084f75afadfce5286aad2091b7","seq":2,"signature":"ed25519:zMm8KF2AKxVwp6mPm4ZjMrZ7bbaC8a0u8mgGJceb/vtyZsj9oAHnB+xv8h3ee3n+qZGD9xgzgCLchVQL1E8pCA=="}`
)

func vecRecords(t *testing.T) (Record, Record) {
	ph, err := ParamsHash([]byte(vecParams))
	if err != nil {
		t.Fatal(err)
	}
	if ph != vecParamsHash {
		t.Fatalf("ParamsHash = %s, want %s", ph, vecParamsHash)
	}
	r1 := Record{
		Timestamp: 1706620800, TokenID: "cap_1234567890abcdef", Action: "execute", App: "terminal",
		Method: "execute_command", ParamsHash: ph, AuditTag: "Code compilation task",
		Decision: DecisionAllow, ClientID: "cl_agent", Capability: "app.com.example.terminal.execute_command",
		Permission: "app.terminal.execute", CallID: "call_1", Kind: KindDecision,
	}
	r2 := r1
	r2.Kind, r2.Result, r2.DurationMS, r2.Timestamp = KindOutcome, "success", 42, 1706620801
	return r1, r2
}

func TestVectorChain(t *testing.T) {
	r1, r2 := vecRecords(t)
	b1, err := r1.Body()
	if err != nil {
		t.Fatal(err)
	}
	if string(b1) != vecBody1 {
		t.Fatalf("body 1:\n got %s\nwant %s", b1, vecBody1)
	}
	if h := EntryHash("", 1, b1); h != vecHash1 {
		t.Fatalf("hash 1 = %s, want %s", h, vecHash1)
	}
	b2, err := r2.Body()
	if err != nil {
		t.Fatal(err)
	}
	if string(b2) != vecBody2 {
		t.Fatalf("body 2:\n got %s\nwant %s", b2, vecBody2)
	}
	if h := EntryHash(vecHash1, 2, b2); h != vecHash2 {
		t.Fatalf("hash 2 = %s, want %s", h, vecHash2)
	}
	for i, b := range []string{vecBody1, vecBody2} {
		got, err := DecodeRecord([]byte(b))
		if err != nil {
			t.Fatalf("DecodeRecord %d: %v", i+1, err)
		}
		if want := []Record{r1, r2}[i]; got != want {
			t.Fatalf("DecodeRecord %d = %+v, want %+v", i+1, got, want)
		}
	}
}

func TestVectorCheckpoint(t *testing.T) {
	at := time.Date(2024, 1, 30, 13, 20, 1, 500000000, time.UTC)
	c := SignCheckpoint(testKey(), 2, vecHash2, at)
	if string(c.Body) != vecCheckpoint {
		t.Fatalf("checkpoint:\n got %s\nwant %s", c.Body, vecCheckpoint)
	}
	if c.Seq != 2 || c.Head != vecHash2 || !c.At.Equal(at) {
		t.Fatalf("checkpoint fields = %d %s %v", c.Seq, c.Head, c.At)
	}
	if err := VerifyCheckpoint(pubOf(testKey()), c); err != nil {
		t.Fatalf("VerifyCheckpoint: %v", err)
	}
	// The same instant in another zone signs the same bytes.
	c2 := SignCheckpoint(testKey(), 2, vecHash2, at.In(time.FixedZone("x", 3600)))
	if string(c2.Body) != vecCheckpoint {
		t.Fatalf("zone changed the body: %s", c2.Body)
	}
	if err := VerifyCheckpoint(pubOf(otherKey()), c); err == nil {
		t.Fatal("checkpoint verified with another key")
	}
	if err := VerifyCheckpoint(ed25519.PublicKey{1, 2}, c); err == nil {
		t.Fatal("checkpoint verified with a short key")
	}
}

// A checkpoint signed before versions still verifies; one whose signature is moved to the
// other format (a legacy signature under a version, or a versioned one without) does not,
// and a token's signature by the same key is no checkpoint's.
func TestVectorLegacyCheckpoint(t *testing.T) {
	pub := pubOf(testKey())
	legacy := store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(vecLegacyCheckpoint)}
	if err := VerifyCheckpoint(pub, legacy); err != nil {
		t.Fatalf("the legacy checkpoint: %v", err)
	}
	sigOf := func(body string) string {
		i := strings.Index(body, `"signature":"`) + len(`"signature":"`)
		return body[i : i+strings.IndexByte(body[i:], '"')]
	}
	swapped := map[string]string{
		"legacy signature, versioned body": strings.Replace(vecCheckpoint, sigOf(vecCheckpoint), sigOf(vecLegacyCheckpoint), 1),
		"versioned signature, legacy body": strings.Replace(vecLegacyCheckpoint, sigOf(vecLegacyCheckpoint), sigOf(vecCheckpoint), 1),
		"another version":                  strings.Replace(vecCheckpoint, `"version":"2"`, `"version":"3"`, 1),
		"a number version":                 strings.Replace(vecCheckpoint, `"version":"2"`, `"version":2`, 1),
	}
	for name, body := range swapped {
		if err := VerifyCheckpoint(pub, store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(body)}); err == nil {
			t.Errorf("%s verified", name)
		}
	}
}
