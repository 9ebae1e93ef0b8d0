// Package bench measures capgate's hot paths for `capgate bench`: what a figure in the README
// or docs/ was measured with, reproducible on any machine.
package bench

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/manifest"
)

// ManifestOptions configures Manifest. The zero value measures a 100-capability manifest.
type ManifestOptions struct {
	Caps       int           // capabilities in the generated manifest; 0 means 100
	Iterations int           // measured runs; 0 means as many as fit in Duration
	Duration   time.Duration // 0 means one second
}

// ManifestReport is the median time of each stage of loading and verifying one manifest,
// cold (every schema compiled) and warm (the schemas found in the compiled-schema cache, as when
// a gateway re-verifies a manifest it has seen), and the floor both are compared with: decoding
// the same bytes with encoding/json plus one ed25519.Verify, the least any verifier of a signed
// JSON document must do.
type ManifestReport struct {
	Caps       int        `json:"caps"`
	Bytes      int        `json:"bytes"`
	Iterations int        `json:"iterations"`
	Cold       StageTimes `json:"cold"`
	Warm       StageTimes `json:"warm"`
	FloorUS    float64    `json:"floor_us"`
}

// StageTimes is the median of each stage in microseconds, and the total's ratio to the floor.
type StageTimes struct {
	ParseUS      float64 `json:"parse_us"`
	DecodeUS     float64 `json:"decode_validate_us"`
	CanonUS      float64 `json:"canonicalize_us"`
	CompileUS    float64 `json:"schema_compile_us"`
	SignatureUS  float64 `json:"signature_us"`
	TotalUS      float64 `json:"total_us"`
	RatioToFloor float64 `json:"ratio_to_floor"`
}

// staticKeys is a KeySource of one key, so that no file system time is measured.
type staticKeys struct{ k ed25519.PublicKey }

func (s staticKeys) Keys(string) ([]ed25519.PublicKey, error) { return []ed25519.PublicKey{s.k}, nil }

type samples struct{ parse, decode, canon, compile, signature, total []time.Duration }

func (s samples) times(floor float64) StageTimes {
	t := StageTimes{
		ParseUS: median(s.parse), DecodeUS: median(s.decode), CanonUS: median(s.canon),
		CompileUS: median(s.compile), SignatureUS: median(s.signature), TotalUS: median(s.total),
	}
	if floor > 0 {
		t.RatioToFloor = t.TotalUS / floor
	}
	return t
}

// Manifest generates and signs a manifest of opts.Caps capabilities and measures loading and
// verifying it, cold and warm, beside the floor.
func Manifest(opts ManifestOptions) (ManifestReport, error) {
	if opts.Caps <= 0 {
		opts.Caps = 100
	}
	if opts.Duration <= 0 {
		opts.Duration = time.Second
	}
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return ManifestReport{}, err
	}
	data, err := SignedManifest(opts.Caps, priv)
	if err != nil {
		return ManifestReport{}, err
	}
	keys := staticKeys{pub}
	sig := ed25519.Sign(priv, data)
	// One core, as the goal is stated: the collector gets no second core to hide behind.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer manifest.ResetSchemaCache()

	var cold, warm samples
	var floor []time.Duration
	run := func(s *samples, reset bool) error {
		if reset {
			manifest.ResetSchemaCache()
		}
		start := time.Now()
		v, t := manifest.VerifyTimed(data, keys)
		elapsed := time.Since(start)
		if !v.Trusted() {
			return fmt.Errorf("bench: generated manifest did not verify: %s %s", v.Reason, v.Detail)
		}
		s.parse, s.decode, s.canon = append(s.parse, t.Parse), append(s.decode, t.Decode), append(s.canon, t.Canonicalize)
		s.compile, s.signature = append(s.compile, t.Compile), append(s.signature, t.Keys+t.Signature)
		s.total = append(s.total, elapsed)
		return nil
	}
	deadline := time.Now().Add(opts.Duration)
	for i := 0; ; i++ {
		if opts.Iterations > 0 && i >= opts.Iterations {
			break
		}
		if opts.Iterations == 0 && i > 0 && time.Now().After(deadline) {
			break
		}
		if err := run(&cold, true); err != nil {
			return ManifestReport{}, err
		}
		if err := run(&warm, false); err != nil {
			return ManifestReport{}, err
		}
		start := time.Now()
		var anyDoc any
		if err := json.Unmarshal(data, &anyDoc); err != nil {
			return ManifestReport{}, err
		}
		if !ed25519.Verify(pub, data, sig) {
			return ManifestReport{}, fmt.Errorf("bench: floor signature did not verify")
		}
		floor = append(floor, time.Since(start))
	}
	r := ManifestReport{Caps: opts.Caps, Bytes: len(data), Iterations: len(floor), FloorUS: median(floor)}
	r.Cold, r.Warm = cold.times(r.FloorUS), warm.times(r.FloorUS)
	return r, nil
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds()) / 1e3
}

// SignedManifest returns a realistic manifest of n capabilities, each with parameter and
// return schemas of a few properties, signed with key.
func SignedManifest(n int, key ed25519.PrivateKey) ([]byte, error) {
	doc, err := manifest.Parse(GenerateManifest(n))
	if err != nil {
		return nil, err
	}
	if ps := doc.Validate(); len(ps) > 0 {
		return nil, ps
	}
	signed, err := manifest.Sign(doc, key)
	if err != nil {
		return nil, err
	}
	// Signing writes the document indented for people; agents and installers ship it compact.
	var compact bytes.Buffer
	if err := json.Compact(&compact, signed); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// GenerateManifest returns an unsigned manifest of n capabilities in the shape of the
// manifest document, each different, so that nothing is cached across capabilities.
func GenerateManifest(n int) []byte { return generateApp("org.example.bench", n) }

// generateApp is GenerateManifest for the app appID, a reverse-DNS name of three labels.
func generateApp(appID string, n int) []byte {
	categories := manifest.Categories
	effects := manifest.SideEffects
	var b strings.Builder
	fmt.Fprintf(&b, `{"app_id":%q,"version":"2.3.0","manifest_version":"1.0","capabilities":[`, appID)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"bench.%s.action_%d","name":"Action %d","description":"Performs action number %d on the document model and reports the state after it.",`, appID, i, i, i)
		fmt.Fprintf(&b, `"category":%q,"side_effects":%q,"version":"1.%d","auth_level":"user",`, categories[i%len(categories)], effects[i%len(effects)], i%10)
		fmt.Fprintf(&b, `"parameters":{"type":"object","required":["path_%d"],"properties":{"path_%d":{"type":"string","minLength":1,"maxLength":4096},"limit":{"type":"integer","minimum":1,"maximum":%d},"mode":{"type":"string","enum":["fast","safe"]}},"additionalProperties":false},`, i, i, 100+i)
		fmt.Fprintf(&b, `"returns":{"type":"object","properties":{"items_%d":{"type":"array","items":{"type":"string"}},"count":{"type":"integer"}}}`, i)
		if i%3 == 0 {
			fmt.Fprintf(&b, `,"undo_window_ms":%d,"confirmation_required":true`, 30000+i)
		}
		b.WriteByte('}')
	}
	b.WriteString(`],"events":[{"event_type":"document.changed","description":"The document changed.","payload_schema":{"type":"object"}}]}`)
	return []byte(b.String())
}
