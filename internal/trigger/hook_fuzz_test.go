package trigger

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzVerifyHook feeds VerifyHook random headers and bodies for one trigger whose secret
// signed one body at one time. It must never panic; it may verify only a request whose
// body is that body and whose header carries that signature's exact v1 value, and then
// only with that request's event id; every refusal must wrap ErrHookSignature and hold
// neither the secret nor the MAC. Whatever the body, a header SignHook makes for it must
// verify (the round trip).
func FuzzVerifyHook(f *testing.F) {
	secret := vectorSecret()
	body := []byte(vectorBody)
	good := SignHook(secret, vectorTriggerID, vectorNow, body)
	wantV1 := "v1=" + vectorMAC

	f.Add(good, body)
	f.Add(vectorHeader, []byte(vectorBody+" "))
	f.Add(" t=1700000000 ,\tv1="+vectorMAC+" ", body)
	f.Add("t=1700000000,v1="+strings.Repeat("0", 64)+","+wantV1, body)
	f.Add("t=1700000000,t=1700000000,"+wantV1, body)
	f.Add("t=1700000001,"+wantV1, body)
	f.Add("t=01700000000,"+wantV1, body)
	f.Add("t=-1,"+wantV1, body)
	f.Add("t=99999999999999999999,"+wantV1, body)
	f.Add("t=1700000000,v1="+strings.ToUpper(vectorMAC), body)
	f.Add("t=1700000000,v1="+vectorMAC[:63], body)
	f.Add("t=1700000000,v0=x,v1="+vectorMAC+",v2=y", body)
	f.Add("t=1700000000"+strings.Repeat(",v1="+vectorMAC, 5), body)
	f.Add("", []byte{})
	f.Add(",,,", []byte(nil))
	f.Add("=,=", body)
	f.Add(strings.Repeat("v1=", 400), body)

	forbidden := []string{vectorSecretText, strings.TrimPrefix(vectorSecretText, hookSecretPrefix), vectorMAC}

	f.Fuzz(func(t *testing.T, header string, gotBody []byte) {
		id, err := VerifyHook(secret, vectorTriggerID, header, gotBody, vectorNow)
		if err == nil {
			if !bytes.Equal(gotBody, body) {
				t.Fatalf("verified another body (header %q)", header)
			}
			if !hasEntry(header, wantV1) {
				t.Fatalf("verified header %q without the signature's v1", header)
			}
			if id != vectorEventID {
				t.Fatalf("event id %q, want %q", id, vectorEventID)
			}
		} else {
			if id != "" {
				t.Fatalf("refused with event id %q", id)
			}
			if !errors.Is(err, ErrHookSignature) {
				t.Fatalf("refusal %v does not wrap ErrHookSignature", err)
			}
			for _, s := range forbidden {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("refusal %q holds the secret or the MAC", err)
				}
			}
		}

		if len(gotBody) > MaxHookBody {
			return
		}
		at := vectorNow.Add(-time.Minute)
		signed := SignHook(secret, vectorTriggerID, at, gotBody)
		id1, err := VerifyHook(secret, vectorTriggerID, signed, gotBody, vectorNow)
		if err != nil {
			t.Fatalf("a header SignHook made does not verify: %v", err)
		}
		id2, err := VerifyHook(secret, vectorTriggerID, signed, bytes.Clone(gotBody), vectorNow)
		if err != nil || id2 != id1 {
			t.Fatalf("the same request twice: event ids %q and %q (%v)", id1, id2, err)
		}
	})
}

// hasEntry reports whether header, split as VerifyHook splits it, has entry e.
func hasEntry(header, e string) bool {
	for entry := range strings.SplitSeq(header, ",") {
		if strings.Trim(entry, " \t") == e {
			return true
		}
	}
	return false
}
