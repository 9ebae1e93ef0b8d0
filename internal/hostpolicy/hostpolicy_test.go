package hostpolicy

import (
	"crypto/ed25519"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

type oneKey struct{ k ed25519.PublicKey }

func (o oneKey) Keys(id string) ([]ed25519.PublicKey, error) {
	if id != KeyID {
		return nil, errors.New("no key")
	}
	return []ed25519.PublicKey{o.k}, nil
}

const doc = `{"policy_version": "1.0", "allow_private": ["10.20.0.0/16", "fd12:3456::/32"], "timeout_ceiling_ms": 600000, "budget_ceiling": {"memory_mb": 512}}`

func TestSignVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	signed, err := Sign([]byte(doc), priv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Verify(signed, oneKey{pub})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllowPrivate) != 2 || p.AllowPrivate[0] != netip.MustParsePrefix("10.20.0.0/16") || p.TimeoutCeilingMS != 600000 || p.BudgetCeiling["memory_mb"] != 512 {
		t.Fatalf("policy: %+v", p)
	}
	otherPub, _, _ := ed25519.GenerateKey(nil)
	tampered := strings.Replace(string(signed), "10.20.0.0/16", "10.0.0.0/8", 1)
	cases := map[string]struct {
		data string
		keys oneKey
		want error
	}{
		"unsigned":      {doc, oneKey{pub}, ErrUnsigned},
		"tampered":      {tampered, oneKey{pub}, ErrBadSignature},
		"other key":     {string(signed), oneKey{otherPub}, ErrBadSignature},
		"bad signature": {strings.Replace(string(signed), `"signature":"ed25519:`, `"signature":"ed25519:x`, 1), oneKey{pub}, ErrBadSignature},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Verify([]byte(tc.data), tc.keys); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseProviders(t *testing.T) {
	p, err := Parse([]byte(`{"policy_version":"1.0","providers":{"denied":["com.example.ads"],"paths":["api","tool_server","handoff"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Providers.Denied) != 1 || p.Providers.Denied[0] != "com.example.ads" || len(p.Providers.Paths) != 3 || p.Providers.Paths[2] != "handoff" {
		t.Fatalf("providers: %+v", p.Providers)
	}
}

// trigger_max_days bounds a trigger's end date.
func TestTriggerMaxDays(t *testing.T) {
	p, err := Parse([]byte(`{"policy_version":"1.0","trigger_max_days":30}`))
	if err != nil || p.TriggerMaxDays != 30 {
		t.Fatalf("%+v %v", p, err)
	}
	if p, err := Parse([]byte(`{"policy_version":"1.0"}`)); err != nil || p.TriggerMaxDays != 0 {
		t.Fatalf("absent: %+v %v", p, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"public prefix":      `{"policy_version":"1.0","allow_private":["8.8.8.0/24"]}`,
		"metadata range":     `{"policy_version":"1.0","allow_private":["169.254.0.0/16"]}`,
		"everything":         `{"policy_version":"1.0","allow_private":["0.0.0.0/0"]}`,
		"wider than private": `{"policy_version":"1.0","allow_private":["10.0.0.0/7"]}`,
		"host bits":          `{"policy_version":"1.0","allow_private":["10.1.2.3/16"]}`,
		"not canonical":      `{"policy_version":"1.0","allow_private":["fd12:3456:0::/32"]}`,
		"unknown member":     `{"policy_version":"1.0","allow_public":["8.8.8.8/32"]}`,
		"duplicate member":   `{"policy_version":"1.0","allow_private":[],"allow_private":["10.0.0.0/8"]}`,
		"no version":         `{"allow_private":["10.0.0.0/8"]}`,
		"negative ceiling":   `{"policy_version":"1.0","timeout_ceiling_ms":-1}`,
		"fractional budget":  `{"policy_version":"1.0","budget_ceiling":{"cpu":1.5}}`,
		"not an object":      `[]`,
		"providers a list":   `{"policy_version":"1.0","providers":["com.example.a"]}`,
		"providers unknown":  `{"policy_version":"1.0","providers":{"allowed":["com.example.a"]}}`,
		"denied not an id":   `{"policy_version":"1.0","providers":{"denied":["../x"]}}`,
		"denied twice":       `{"policy_version":"1.0","providers":{"denied":["com.example.a","com.example.a"]}}`,
		"unknown path":       `{"policy_version":"1.0","providers":{"paths":["carrier_pigeon"]}}`,
		"trigger days zero":  `{"policy_version":"1.0","trigger_max_days":0}`,
		"trigger days huge":  `{"policy_version":"1.0","trigger_max_days":3651}`,
		"trigger days text":  `{"policy_version":"1.0","trigger_max_days":"30"}`,
		"trigger days frac":  `{"policy_version":"1.0","trigger_max_days":1.5}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(in))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, v := range []string{"8.8.8", "169.254", "10.1.2.3"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error echoes the value: %v", err)
				}
			}
		})
	}
}
