package trigger

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The vector below was computed outside Go, with openssl and sha256sum:
//
//	printf '1700000000.trg_0123.{"event":"push"}' |
//	    openssl dgst -sha256 -mac HMAC -macopt hexkey:000102…1f
//	printf '1700000000.{"event":"push"}' | sha256sum
const (
	vectorSecretText = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	vectorTriggerID  = "trg_0123"
	vectorBody       = `{"event":"push"}`
	vectorT          = 1700000000
	vectorMAC        = "7b6e1be8e025021f2b526652eef3e871f8013a4da41e9d6bad413932e1cd4702"
	vectorHeader     = "t=1700000000,v1=" + vectorMAC
	vectorEventID    = "hook:7951383044d9e0649c9400f33d142ca6"
)

var vectorNow = time.Unix(vectorT, 0)

func vectorSecret() []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

func TestHookVector(t *testing.T) {
	secret, err := ParseHookSecret(vectorSecretText)
	if err != nil {
		t.Fatalf("ParseHookSecret: %v", err)
	}
	if !bytes.Equal(secret, vectorSecret()) {
		t.Fatalf("ParseHookSecret = %x, want %x", secret, vectorSecret())
	}
	if got := SignHook(secret, vectorTriggerID, vectorNow, []byte(vectorBody)); got != vectorHeader {
		t.Errorf("SignHook = %q, want %q", got, vectorHeader)
	}
	id, err := VerifyHook(secret, vectorTriggerID, vectorHeader, []byte(vectorBody), vectorNow)
	if err != nil {
		t.Fatalf("VerifyHook: %v", err)
	}
	if id != vectorEventID {
		t.Errorf("event id = %q, want %q", id, vectorEventID)
	}
}

// hookCase is one request VerifyHook is asked about. A nil want means it must verify.
type hookCase struct {
	name   string
	secret []byte
	id     string
	header string
	body   []byte
	now    time.Time
	want   error // the refusal, one of the errHook* values, or nil
}

// hookCases are the requests of the adversarial table, all against the vector's trigger
// unless they say otherwise.
func hookCases() []hookCase {
	secret := vectorSecret()
	body := []byte(vectorBody)
	now := vectorNow
	sign := func(at time.Time, b []byte) string { return SignHook(secret, vectorTriggerID, at, b) }
	good := sign(now, body)
	otherSecret := bytes.Repeat([]byte{0xA5}, 32)
	otherMAC := strings.TrimPrefix(SignHook(otherSecret, vectorTriggerID, now, body), "t=1700000000,v1=")
	t0 := "t=" + strconv.FormatInt(vectorT, 10)
	v1 := ",v1=" + vectorMAC

	oneByte := bytes.Clone(body)
	oneByte[3] ^= 0x01
	big := bytes.Repeat([]byte("x"), MaxHookBody)
	pad := func(n int) string { // an unknown entry that brings good to n bytes
		return good + ",x=" + strings.Repeat("a", n-len(good)-3)
	}

	return []hookCase{
		{name: "good", header: good},
		{name: "vector", header: vectorHeader},
		{name: "forged with another secret", header: SignHook(otherSecret, vectorTriggerID, now, body), want: errHookNoMatch},
		{name: "body changed by one byte", header: good, body: oneByte, want: errHookNoMatch},
		{name: "body with a byte more", header: good, body: append(bytes.Clone(body), '\n'), want: errHookNoMatch},
		{name: "empty body against a signed one", header: good, body: []byte{}, want: errHookNoMatch},
		{name: "another trigger id", header: good, id: "trg_0124", want: errHookNoMatch},
		{name: "trigger id prefix", header: good, id: "trg_012", want: errHookNoMatch},
		{name: "signed for another trigger", header: SignHook(secret, "trg_9999", now, body), want: errHookNoMatch},
		{name: "timestamp changed after signing", header: "t=1700000001" + v1, want: errHookNoMatch},
		{name: "timestamp spelled anew after signing", header: "t=01700000000" + v1, want: errHookT},

		{name: "old at the window's edge", header: good, now: now.Add(HookWindow)},
		{name: "old by a second more", header: good, now: now.Add(HookWindow + time.Second), want: errHookWindow},
		{name: "old by a day", header: good, now: now.Add(24 * time.Hour), want: errHookWindow},
		{name: "future at the window's edge", header: good, now: now.Add(-HookWindow)},
		{name: "future by a second more", header: good, now: now.Add(-HookWindow - time.Second), want: errHookWindow},
		{name: "signed in the future", header: sign(now.Add(time.Hour), body), want: errHookWindow},
		{name: "now before 1970", header: good, now: time.Unix(-1<<62, 0), want: errHookWindow},
		{name: "t zero", header: "t=0" + v1, want: errHookWindow},

		{name: "v1 uppercase hex", header: t0 + ",v1=" + strings.ToUpper(vectorMAC), want: errHookV1},
		{name: "v1 one uppercase digit", header: t0 + ",v1=7B" + vectorMAC[2:], want: errHookV1},
		{name: "v1 truncated by one digit", header: t0 + ",v1=" + vectorMAC[:63], want: errHookV1},
		{name: "v1 truncated by one byte", header: t0 + ",v1=" + vectorMAC[:62], want: errHookV1},
		{name: "v1 half", header: t0 + ",v1=" + vectorMAC[:32], want: errHookV1},
		{name: "v1 a digit more", header: t0 + v1 + "0", want: errHookV1},
		{name: "v1 empty", header: t0 + ",v1=", want: errHookV1},
		{name: "v1 not hex", header: t0 + ",v1=" + strings.Repeat("zz", 32), want: errHookV1},
		{name: "v1 base64", header: t0 + ",v1=" + base64.StdEncoding.EncodeToString(mustHex(vectorMAC)), want: errHookV1},
		{name: "v1 with a space inside", header: t0 + ",v1=" + vectorMAC[:32] + " " + vectorMAC[33:], want: errHookV1},
		{name: "v1 bad even beside a good one", header: good + ",v1=" + strings.ToUpper(vectorMAC), want: errHookV1},

		{name: "empty header", header: "", want: errHookMissing},
		{name: "blank header", header: " \t ", want: errHookMissing},
		{name: "no t", header: "v1=" + vectorMAC, want: errHookNoT},
		{name: "no v1", header: t0, want: errHookNoV1},
		{name: "only unknown keys", header: t0 + ",v0=" + vectorMAC, want: errHookNoV1},
		{name: "v1 key in uppercase", header: t0 + ",V1=" + vectorMAC, want: errHookNoV1},
		{name: "t key in uppercase", header: "T=1700000000" + v1, want: errHookNoT},
		{name: "duplicate t, same value", header: t0 + "," + t0 + v1, want: errHookTwoT},
		{name: "duplicate t, second bad", header: good + ",t=1700000001", want: errHookTwoT},
		{name: "entry without =", header: good + ",v1", want: errHookEntry},
		{name: "entry with empty key", header: good + ",=1", want: errHookEntry},
		{name: "empty entry", header: t0 + ",," + vectorMAC, want: errHookEntry},
		{name: "trailing comma", header: good + ",", want: errHookEntry},
		{name: "semicolons for commas", header: t0 + ";v1=" + vectorMAC, want: errHookT},
		{name: "space around =", header: "t = 1700000000" + v1, want: errHookNoT},

		{name: "four signatures, last right", header: t0 + strings.Repeat(",v1="+otherMAC, 3) + v1},
		{name: "five signatures, first right", header: good + strings.Repeat(",v1="+otherMAC, 4), want: errHookManyV1},
		{name: "five right signatures", header: t0 + strings.Repeat(v1, 5), want: errHookManyV1},

		{name: "header of 1024 bytes", header: pad(MaxSignatureHeader)},
		{name: "header of 1025 bytes", header: pad(MaxSignatureHeader + 1), want: errHookLong},
		{name: "header of 1025 spaces", header: strings.Repeat(" ", MaxSignatureHeader+1), want: errHookLong},

		{name: "t not numeric", header: "t=abc" + v1, want: errHookT},
		{name: "t empty", header: "t=" + v1, want: errHookT},
		{name: "t negative", header: "t=-1700000000" + v1, want: errHookT},
		{name: "t with plus", header: "t=+1700000000" + v1, want: errHookT},
		{name: "t leading zero", header: "t=01700000000" + v1, want: errHookT},
		{name: "t fractional", header: "t=1700000000.5" + v1, want: errHookT},
		{name: "t exponent", header: "t=1.7e9" + v1, want: errHookT},
		{name: "t hex", header: "t=0x6553f100" + v1, want: errHookT},
		{name: "t milliseconds, far future", header: "t=1700000000000" + v1, want: errHookWindow},
		{name: "t largest int64", header: "t=9223372036854775807" + v1, want: errHookWindow},
		{name: "t past int64", header: "t=9223372036854775808" + v1, want: errHookT},
		{name: "t huge", header: "t=" + strings.Repeat("9", 400) + v1, want: errHookT},
		{name: "t with unicode digits", header: "t=١٧٠٠٠٠٠٠٠٠" + v1, want: errHookT},

		{name: "rotation, second right", header: t0 + ",v1=" + otherMAC + v1},
		{name: "rotation, first right", header: good + ",v1=" + otherMAC},
		{name: "rotation, neither right", header: t0 + ",v1=" + otherMAC + ",v1=" + otherMAC, want: errHookNoMatch},
		{name: "v1 before t", header: "v1=" + vectorMAC + "," + t0},
		{name: "whitespace around entries", header: " \t" + t0 + " , \tv1=" + vectorMAC + "\t "},
		{name: "unknown keys ignored", header: "v0=not-a-mac," + t0 + ",v2=" + strings.Repeat("?", 40) + v1 + ",x=a=b"},

		{name: "nil secret", secret: []byte(nil), header: good, want: errHookSecret},
		{name: "empty secret signs and is refused", secret: []byte{}, header: SignHook(nil, vectorTriggerID, now, body), want: errHookSecret},
		{name: "short secret", secret: secret[:16], header: SignHook(secret[:16], vectorTriggerID, now, body), want: errHookSecret},
		{name: "long secret", secret: append(bytes.Clone(secret), 0), header: good, want: errHookSecret},
		{name: "empty trigger id", id: "-", header: good, want: errHookTriggerID},
		{name: "trigger id with a dot", id: "trg.0123", header: good, want: errHookTriggerID},

		{name: "body of the largest size", header: sign(now, big), body: big},
		{name: "body a byte too long", header: good, body: append(bytes.Clone(big), 'x'), want: errHookBody},
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// fill gives a case the vector's secret, trigger id, body and clock where it names none.
func (c hookCase) fill() hookCase {
	if c.secret == nil && c.want != errHookSecret {
		c.secret = vectorSecret()
	}
	switch c.id {
	case "":
		c.id = vectorTriggerID
	case "-":
		c.id = ""
	}
	if c.body == nil {
		c.body = []byte(vectorBody)
	}
	if c.now.IsZero() {
		c.now = vectorNow
	}
	return c
}

func TestVerifyHook(t *testing.T) {
	for _, c := range hookCases() {
		t.Run(c.name, func(t *testing.T) {
			c := c.fill()
			id, err := VerifyHook(c.secret, c.id, c.header, c.body, c.now)
			if c.want == nil {
				if err != nil {
					t.Fatalf("VerifyHook refused a good request: %v", err)
				}
				if !strings.HasPrefix(id, "hook:") || len(id) != len("hook:")+32 {
					t.Errorf("event id %q is not hook: and 32 hex digits", id)
				}
				return
			}
			if err == nil {
				t.Fatalf("VerifyHook verified a bad request (event id %q), want %v", id, c.want)
			}
			if id != "" {
				t.Errorf("VerifyHook refused but returned event id %q", id)
			}
			if !errors.Is(err, ErrHookSignature) {
				t.Errorf("error %v does not wrap ErrHookSignature", err)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error = %v, want %v", err, c.want)
			}
		})
	}
}

// TestHookErrorsKeepSecrets checks that no refusal carries the secret, in any spelling,
// nor the header's MACs or timestamp.
func TestHookErrorsKeepSecrets(t *testing.T) {
	secret := vectorSecret()
	secretText := vectorSecretText
	forbidden := []string{
		secretText,
		strings.TrimPrefix(secretText, hookSecretPrefix),
		hex.EncodeToString(secret),
		base64.StdEncoding.EncodeToString(secret),
		vectorMAC,
		vectorMAC[:16],
		strings.ToUpper(vectorMAC[:16]),
		"1700000000",
	}
	seen := 0
	for _, c := range hookCases() {
		c := c.fill()
		_, err := VerifyHook(c.secret, c.id, c.header, c.body, c.now)
		if err == nil {
			continue
		}
		seen++
		msg := err.Error()
		for _, f := range forbidden {
			if strings.Contains(msg, f) {
				t.Errorf("%s: error %q holds a secret or the header's MAC", c.name, msg)
			}
		}
		if h := strings.TrimSpace(c.header); len(h) > 12 && strings.Contains(msg, h) {
			t.Errorf("%s: error %q quotes the header", c.name, msg)
		}
	}
	if seen < 40 {
		t.Fatalf("only %d refusals checked; the table lost its bad cases", seen)
	}

	for _, text := range badHookSecretTexts() {
		_, err := ParseHookSecret(text)
		if err == nil {
			continue
		}
		body := strings.TrimPrefix(text, hookSecretPrefix)
		if len(body) > 8 && strings.Contains(err.Error(), body[:8]) {
			t.Errorf("ParseHookSecret error %q quotes the text", err)
		}
	}
}

func TestHookEventID(t *testing.T) {
	secret := vectorSecret()
	body := []byte(vectorBody)
	verify := func(header string, body []byte, now time.Time) string {
		t.Helper()
		id, err := VerifyHook(secret, vectorTriggerID, header, body, now)
		if err != nil {
			t.Fatalf("VerifyHook: %v", err)
		}
		return id
	}
	header := SignHook(secret, vectorTriggerID, vectorNow, body)

	first := verify(header, body, vectorNow)
	replay := verify(header, bytes.Clone(body), vectorNow.Add(time.Minute))
	if first != replay {
		t.Errorf("a replay has event id %q, the first %q; want the same", replay, first)
	}
	rotated := verify("t=1700000000,v1="+strings.Repeat("0", 64)+","+strings.TrimPrefix(header, "t=1700000000,"), body, vectorNow)
	if rotated != first {
		t.Errorf("the same request with another v1 beside has event id %q, want %q", rotated, first)
	}

	other := []byte(`{"event":"pull"}`)
	if id := verify(SignHook(secret, vectorTriggerID, vectorNow, other), other, vectorNow); id == first {
		t.Errorf("a different body has the same event id %q", id)
	}
	later := vectorNow.Add(time.Second)
	if id := verify(SignHook(secret, vectorTriggerID, later, body), body, later); id == first {
		t.Errorf("the same body sent a second later has the same event id %q", id)
	}
	// The event id is the request's, not the secret's: the engine keys it by trigger id.
	other2 := bytes.Repeat([]byte{7}, 32)
	id, err := VerifyHook(other2, vectorTriggerID, SignHook(other2, vectorTriggerID, vectorNow, body), body, vectorNow)
	if err != nil || id != first {
		t.Errorf("another secret, same request: event id %q, %v; want %q", id, err, first)
	}
}

func TestNewHookSecret(t *testing.T) {
	secret, text := NewHookSecret()
	if len(secret) != 32 {
		t.Fatalf("secret is %d bytes, want 32", len(secret))
	}
	if !strings.HasPrefix(text, "whsec_") || len(text) != len("whsec_")+43 {
		t.Fatalf("text form is not whsec_ and 43 characters (length %d)", len(text))
	}
	back, err := ParseHookSecret(text)
	if err != nil {
		t.Fatalf("ParseHookSecret(NewHookSecret text): %v", err)
	}
	if !bytes.Equal(back, secret) {
		t.Fatal("ParseHookSecret does not give back NewHookSecret's secret")
	}
	again, againText := NewHookSecret()
	if bytes.Equal(again, secret) || againText == text {
		t.Fatal("two calls of NewHookSecret gave the same secret")
	}
	if bytes.Equal(secret, make([]byte, 32)) {
		t.Fatal("NewHookSecret gave zeros")
	}
	body := []byte("ping")
	if _, err := VerifyHook(secret, "trg_x", SignHook(back, "trg_x", vectorNow, body), body, vectorNow); err != nil {
		t.Fatalf("a header signed with the parsed text does not verify: %v", err)
	}
}

// badHookSecretTexts are text forms ParseHookSecret must refuse.
func badHookSecretTexts() []string {
	good := vectorSecretText
	body := strings.TrimPrefix(good, hookSecretPrefix)
	return []string{
		"",
		"whsec_",
		body,                                   // no prefix
		"WHSEC_" + body,                        // prefix in another case
		"whsk_" + body,                         // another prefix
		"whsec_" + body[:42],                   // a character short
		"whsec_" + body + "A",                  // a character more
		"whsec_" + body + "=",                  // padded
		"whsec_" + body[:42] + "9",             // unused bits set
		"whsec_" + body[:20] + "+" + body[21:], // standard base64, not url
		"whsec_" + body[:20] + "/" + body[21:],
		"whsec_" + body[:20] + "\n" + body[21:], // a line break the decoder would skip
		"whsec_" + body[:20] + " " + body[21:],
		" " + good,
		good + "\n",
		"whsec_" + base64.RawURLEncoding.EncodeToString(make([]byte, 31)),
		"whsec_" + base64.RawURLEncoding.EncodeToString(make([]byte, 33)),
		"whsec_" + hex.EncodeToString(vectorSecret()),
	}
}

func TestParseHookSecret(t *testing.T) {
	for i, text := range badHookSecretTexts() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			secret, err := ParseHookSecret(text)
			if err == nil {
				t.Fatalf("ParseHookSecret accepted a bad text form (bad text %d)", i)
			}
			if secret != nil {
				t.Errorf("ParseHookSecret refused but returned %d bytes", len(secret))
			}
		})
	}
	if _, err := ParseHookSecret(vectorSecretText); err != nil {
		t.Fatalf("ParseHookSecret refused the vector: %v", err)
	}
}

func TestSignHookForm(t *testing.T) {
	h := SignHook(vectorSecret(), vectorTriggerID, time.Unix(vectorT, 999_999_999), []byte(vectorBody))
	if h != vectorHeader {
		t.Errorf("SignHook with a fraction of a second = %q, want %q (whole seconds)", h, vectorHeader)
	}
	if HookSignatureHeader != "Capgate-Signature" {
		t.Errorf("HookSignatureHeader = %q", HookSignatureHeader)
	}
}

// ExampleVerifyHook shows a sender signing a request and capgate checking it.
func ExampleVerifyHook() {
	secret, _ := ParseHookSecret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
	body := []byte(`{"event":"push"}`)
	at := time.Unix(1700000000, 0)

	header := SignHook(secret, "trg_0123", at, body)
	fmt.Println(HookSignatureHeader + ": " + header)

	eventID, err := VerifyHook(secret, "trg_0123", header, body, at.Add(time.Minute))
	fmt.Println(eventID, err)

	_, err = VerifyHook(secret, "trg_0123", header, body, at.Add(time.Hour))
	fmt.Println(errors.Is(err, ErrHookSignature), err)
	// Output:
	// Capgate-Signature: t=1700000000,v1=7b6e1be8e025021f2b526652eef3e871f8013a4da41e9d6bad413932e1cd4702
	// hook:7951383044d9e0649c9400f33d142ca6 <nil>
	// true webhook signature does not verify: Capgate-Signature: t is outside the 5-minute window
}
