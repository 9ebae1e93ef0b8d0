package trigger

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	// HookWindow is how far a webhook's timestamp may be from now, either way. It bounds how
	// long a captured request can be replayed (a replay inside it is a duplicate event id)
	// while leaving room for a sender's clock to drift and a request to be retried.
	HookWindow = 5 * time.Minute

	// MaxHookBody is the largest webhook body read; a longer one is refused. An event is a
	// notice that something happened, not a document; 64 KiB holds the common senders'
	// payloads and bounds what an unauthenticated request costs to hash.
	MaxHookBody = 64 << 10

	// MaxSignatureHeader is the longest Capgate-Signature header read. A t= and
	// MaxSignatures v1= entries take under 300 bytes; the rest is room for entries of later
	// versions.
	MaxSignatureHeader = 1024

	// MaxSignatures is the most v1= entries one header may carry. Rotation needs two (the
	// old secret and the new); four bounds the comparisons an unauthenticated request costs.
	MaxSignatures = 4

	// HookSignatureHeader is the header that carries a webhook's signature.
	HookSignatureHeader = "Capgate-Signature"

	// hookSecretPrefix starts the text form of a webhook secret, so that a person or a
	// secret scanner can tell what the string is.
	hookSecretPrefix = "whsec_"

	// hookSecretBytes is the length of a webhook secret: the HMAC-SHA256 block of security.
	hookSecretBytes = 32
)

// ErrHookSignature is wrapped by every refusal of VerifyHook (errors.Is), so a front answers
// 401 for all alike and tells a sender nothing about which rule failed. The wrapping error
// names the rule, for capgate's own log.
var ErrHookSignature = errors.New("webhook signature does not verify")

// The refusals of VerifyHook and ParseHookSecret, made once, so that none can carry the
// header's value or the secret.
var (
	errHookSecret     = hookRefusal("the trigger's secret is not 32 bytes")
	errHookTriggerID  = hookRefusal("trigger id is empty or holds a \".\"")
	errHookBody       = hookRefusal(fmt.Sprintf("body is longer than %d bytes", MaxHookBody))
	errHookMissing    = hookRefusal(HookSignatureHeader + ": missing")
	errHookLong       = hookRefusal(fmt.Sprintf("%s: longer than %d bytes", HookSignatureHeader, MaxSignatureHeader))
	errHookEntry      = hookRefusal(HookSignatureHeader + ": every entry must be key=value")
	errHookNoT        = hookRefusal(HookSignatureHeader + ": t missing")
	errHookTwoT       = hookRefusal(HookSignatureHeader + ": t given more than once")
	errHookT          = hookRefusal(HookSignatureHeader + ": t must be unix seconds")
	errHookNoV1       = hookRefusal(HookSignatureHeader + ": no v1 signature")
	errHookManyV1     = hookRefusal(fmt.Sprintf("%s: more than %d v1 signatures", HookSignatureHeader, MaxSignatures))
	errHookV1         = hookRefusal(HookSignatureHeader + ": v1 must be 64 lowercase hex digits")
	errHookWindow     = hookRefusal(fmt.Sprintf("%s: t is outside the %d-minute window", HookSignatureHeader, int(HookWindow/time.Minute)))
	errHookNoMatch    = hookRefusal(HookSignatureHeader + ": no v1 signature matches")
	errHookSecretText = errors.New("webhook secret: must be " + hookSecretPrefix + " followed by 43 base64url characters")
)

var (
	hookWindowSeconds  = uint64(HookWindow / time.Second)
	hookSecretTextLen  = len(hookSecretPrefix) + base64.RawURLEncoding.EncodedLen(hookSecretBytes)
	hookSecretEncoding = base64.RawURLEncoding.Strict()
)

func hookRefusal(rule string) error { return fmt.Errorf("%w: %s", ErrHookSignature, rule) }

// NewHookSecret returns a fresh secret and its text form to show the person once: "whsec_"
// and the 32 bytes in base64url without padding. capgate keeps the secret; the text is for
// the sender and is not stored. It reads crypto/rand, which does not fail.
func NewHookSecret() (secret []byte, text string) {
	secret = make([]byte, hookSecretBytes)
	rand.Read(secret)
	return secret, hookSecretPrefix + base64.RawURLEncoding.EncodeToString(secret)
}

// ParseHookSecret reads the text form of a secret back, for tests and the CLI's
// `trigger hook-sign`. It refuses anything that is not "whsec_" followed by exactly 43
// base64url characters (no padding, no line breaks, no unused bits set), and its error never
// quotes the text.
func ParseHookSecret(text string) ([]byte, error) {
	rest, ok := strings.CutPrefix(text, hookSecretPrefix)
	if !ok || len(text) != hookSecretTextLen {
		return nil, errHookSecretText
	}
	// The decoder skips line breaks; a secret has none, so check each character first.
	for i := range len(rest) {
		if !isBase64URL(rest[i]) {
			return nil, errHookSecretText
		}
	}
	secret, err := hookSecretEncoding.DecodeString(rest)
	if err != nil || len(secret) != hookSecretBytes {
		return nil, errHookSecretText
	}
	return secret, nil
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// SignHook returns the Capgate-Signature header value for body sent to trigger triggerID at
// time at: "t=<unix seconds>,v1=<MAC>". It is for senders, tests and the docs; capgate itself
// only verifies. It signs whatever it is given: a secret that is not 32 bytes, or a trigger
// id VerifyHook refuses, yields a header VerifyHook refuses.
func SignHook(secret []byte, triggerID string, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	mac := hookMAC(secret, t, triggerID, body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac[:])
}

// VerifyHook checks header, the Capgate-Signature value, for body sent to trigger triggerID,
// against the trigger's secret and capgate's clock now; it returns the request's event id.
// Every refusal wraps [ErrHookSignature]; a nil or short secret is refused, never used as a
// key.
//
// # The scheme
//
// A trigger whose event source is a webhook receives POST /v1/hooks/{id} from the outside.
// The sender signs each request with the trigger's own secret: 32 random bytes capgate
// generates when the trigger is created ([NewHookSecret]) and shows the person once, as
// "whsec_" followed by the secret in base64url without padding.
//
// The signature travels in one header:
//
//	Capgate-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256>
//
// The MAC is HMAC-SHA256, keyed with the secret, over the bytes
//
//	<t> "." <trigger id> "." <raw body>
//
// where <t> is the t value exactly as sent (decimal, no sign, no leading zeros) and the
// body is the request's bytes as received, before any decoding. Binding the trigger id
// stops a signed request for one hook from being replayed at another hook that shares
// nothing else; a trigger id holds no ".", so those bytes split one way only, and
// VerifyHook refuses an empty id or one with a ".".
//
// The header's rules, each refused with an error naming it (never quoting the header's
// value or the secret):
//   - entries are key=value, separated by ","; spaces and tabs around an entry are
//     tolerated, an empty entry is not;
//   - exactly one t=, in unix seconds; a second t= is refused;
//   - one to [MaxSignatures] v1= entries, each exactly 64 lowercase hex digits; any one
//     matching is enough, so a sender moving to a new secret can sign with both for a
//     while (secret rotation);
//   - entries with other keys (v0=, a later v2=) are ignored, so the scheme can grow;
//   - the whole header is at most [MaxSignatureHeader] bytes, the body at most
//     [MaxHookBody] bytes;
//   - t is within [HookWindow] of now, on either side ("outside the 5-minute window").
//
// The MAC is computed once and compared with each v1 entry in constant time (hmac.Equal).
//
// # Replays
//
// A request that verifies is named by its event id, "hook:" followed by the first 32 hex
// digits of SHA-256(<t> "." <raw body>). A replay of the same signed request within the
// window has the same event id, and the engine fires a trigger at most once per (trigger
// id, event id); that key, not VerifyHook, is what makes such a replay a duplicate. A
// replay after the window is refused here.
func VerifyHook(secret []byte, triggerID, header string, body []byte, now time.Time) (eventID string, err error) {
	if len(secret) != hookSecretBytes {
		return "", errHookSecret
	}
	if triggerID == "" || strings.Contains(triggerID, ".") {
		return "", errHookTriggerID
	}
	if len(body) > MaxHookBody {
		return "", errHookBody
	}
	sig, err := parseHookSignature(header)
	if err != nil {
		return "", err
	}
	if !withinHookWindow(sig.t, now.Unix()) {
		return "", errHookWindow
	}
	want := hookMAC(secret, sig.text, triggerID, body)
	matched := false
	for _, got := range sig.v1[:sig.n] {
		ok := hmac.Equal(got[:], want[:])
		matched = matched || ok // no early exit: every candidate is compared
	}
	if !matched {
		return "", errHookNoMatch
	}
	return hookEventID(sig.text, body), nil
}

// hookSignature is a parsed Capgate-Signature header.
type hookSignature struct {
	t    int64
	text string // t as sent, which is what the MAC covers
	v1   [MaxSignatures][sha256.Size]byte
	n    int // v1 entries used
}

// parseHookSignature reads header by the rules in VerifyHook's comment. It checks the form
// only; the window and the MAC are VerifyHook's.
func parseHookSignature(header string) (hookSignature, error) {
	var sig hookSignature
	if len(header) > MaxSignatureHeader {
		return sig, errHookLong
	}
	if strings.Trim(header, " \t") == "" {
		return sig, errHookMissing
	}
	haveT := false
	for entry := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(strings.Trim(entry, " \t"), "=")
		if !ok || key == "" {
			return sig, errHookEntry
		}
		switch key {
		case "t":
			if haveT {
				return sig, errHookTwoT
			}
			haveT = true
			t, ok := parseUnixSeconds(value)
			if !ok {
				return sig, errHookT
			}
			sig.t, sig.text = t, value
		case "v1":
			if sig.n == MaxSignatures {
				return sig, errHookManyV1
			}
			if !decodeLowerHex(sig.v1[sig.n][:], value) {
				return sig, errHookV1
			}
			sig.n++
		}
		// Any other key is a later version's entry, ignored.
	}
	if !haveT {
		return sig, errHookNoT
	}
	if sig.n == 0 {
		return sig, errHookNoV1
	}
	return sig, nil
}

// parseUnixSeconds reads s as unix seconds in one spelling only: decimal digits, no sign,
// no leading zeros, within int64. The one spelling keeps the bytes the MAC covers (and the
// event id) one per instant.
func parseUnixSeconds(s string) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	t, err := strconv.ParseInt(s, 10, 64)
	return t, err == nil
}

// decodeLowerHex decodes s into dst if s is exactly 2*len(dst) lowercase hex digits.
// encoding/hex also takes uppercase; the scheme has one spelling.
func decodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// withinHookWindow reports whether |now - t| <= HookWindow, in seconds. The difference is
// taken in uint64 so that no t, however far from now, overflows it.
func withinHookWindow(t, now int64) bool {
	var d uint64
	if t >= now {
		d = uint64(t) - uint64(now)
	} else {
		d = uint64(now) - uint64(t)
	}
	return d <= hookWindowSeconds
}

// hookMAC is HMAC-SHA256(secret, t "." triggerID "." body).
func hookMAC(secret []byte, t, triggerID string, body []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t))
	m.Write([]byte{'.'})
	m.Write([]byte(triggerID))
	m.Write([]byte{'.'})
	m.Write(body)
	var sum [sha256.Size]byte
	m.Sum(sum[:0])
	return sum
}

// hookEventID is "hook:" and the first 32 hex digits of SHA-256(t "." body).
func hookEventID(t string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(t))
	h.Write([]byte{'.'})
	h.Write(body)
	var sum [sha256.Size]byte
	return "hook:" + hex.EncodeToString(h.Sum(sum[:0]))[:32]
}
