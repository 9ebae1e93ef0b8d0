package audit

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// resign returns a checkpoint whose body is msg plus a valid signature by testKey over msg,
// to test that VerifyCheckpoint refuses well-signed bodies of the wrong shape.
func resign(msg string) store.Checkpoint {
	sig := manifest.FormatSignature(ed25519.Sign(testKey(), []byte(msg)))
	body := msg[:len(msg)-1] + `,"signature":"` + sig + `"}`
	return store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(body)}
}

func TestVerifyCheckpointStrict(t *testing.T) {
	good := store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(vecCheckpoint)}
	if err := VerifyCheckpoint(pubOf(testKey()), good); err != nil {
		t.Fatal(err)
	}
	head := `"head":"` + vecHash2 + `"`
	tests := []struct {
		name string
		c    store.Checkpoint
	}{
		{"stored head differs", store.Checkpoint{Seq: 2, Head: vecHash1, Body: good.Body}},
		{"stored seq differs", store.Checkpoint{Seq: 3, Head: vecHash2, Body: good.Body}},
		{"seq edited", store.Checkpoint{Seq: 3, Head: vecHash2, Body: []byte(strings.Replace(vecCheckpoint, `"seq":2`, `"seq":3`, 1))}},
		{"not canonical", store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(strings.Replace(vecCheckpoint, `"seq":2`, `"seq": 2`, 1))}},
		{"signature respelled", store.Checkpoint{Seq: 2, Head: vecHash2, Body: []byte(strings.Replace(vecCheckpoint, `==`, ``, 1))}},
		{"empty", store.Checkpoint{Seq: 2, Head: vecHash2}},
		{"extra member", resign(`{"at":"2024-01-30T13:20:01.5Z",` + head + `,"log":"x","seq":2}`)},
		{"zone offset", resign(`{"at":"2024-01-30T14:20:01.5+01:00",` + head + `,"seq":2}`)},
		{"trailing zero", resign(`{"at":"2024-01-30T13:20:01.50Z",` + head + `,"seq":2}`)},
		{"seq zero", func() store.Checkpoint {
			c := resign(`{"at":"2024-01-30T13:20:01.5Z",` + head + `,"seq":0}`)
			c.Seq = 0
			return c
		}()},
		{"bad head", func() store.Checkpoint {
			c := resign(`{"at":"2024-01-30T13:20:01.5Z","head":"x","seq":2}`)
			c.Head = "x"
			return c
		}()},
		{"signed over itself", resign(`{"at":"2024-01-30T13:20:01.5Z",` + head + `,"seq":2,"zz":1}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := VerifyCheckpoint(pubOf(testKey()), tt.c); !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("err = %v, want ErrBadCheckpoint", err)
			}
		})
	}
	// The resign helper itself makes checkpoints that verify, so the failures above are the
	// rule each case breaks, not a bad signature.
	if err := VerifyCheckpoint(pubOf(testKey()), resign(`{"at":"2024-01-30T13:20:01.5Z",`+head+`,"seq":2}`)); err != nil {
		t.Fatalf("resign helper: %v", err)
	}
}
