package audit

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testHead is a head at seq with the vector hash and, when cp > 0, a checkpoint at cp signed
// by testKey.
func testHead(seq, cp int64) Head {
	h := Head{Seq: seq, Hash: hashOf(seq)}
	if cp > 0 {
		h.Checkpoint = SignCheckpoint(testKey(), cp, hashOf(cp), time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC))
	}
	return h
}

// hashOf is a distinct digest for each seq.
func hashOf(seq int64) string { return EntryHash("", seq, []byte("x")) }

func TestHeadRoundTrip(t *testing.T) {
	for _, h := range []Head{testHead(1, 0), testHead(7, 7), testHead(1<<53-1, 5)} {
		b := appendHead(nil, h)
		got, err := ParseHead(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !sameHead(got, h) {
			t.Fatalf("round trip: %+v, want %+v", got, h)
		}
		slot, err := encodeSlot(h)
		if err != nil || len(slot) != headSlotSize {
			t.Fatalf("slot: %d bytes, %v", len(slot), err)
		}
	}
	// The vector: what a head file's slot holds, byte for byte.
	want := `{"checkpoint":null,"format":"capgate-audit-head-v1","hash":"` + hashOf(3) + `","seq":3}`
	if got := string(appendHead(nil, testHead(3, 0))); got != want {
		t.Fatalf("head:\n%s\nwant\n%s", got, want)
	}
}

func TestParseHeadStrict(t *testing.T) {
	good := string(appendHead(nil, testHead(7, 5)))
	cp := string(testHead(7, 5).Checkpoint.Body)
	h7 := `"hash":"` + hashOf(7) + `"`
	tests := map[string]string{
		"empty":                 ``,
		"not canonical":         strings.Replace(good, `"seq":7`, `"seq": 7`, 1),
		"members reordered":     `{"format":"capgate-audit-head-v1","checkpoint":null,` + h7 + `,"seq":7}`,
		"extra member":          `{"checkpoint":null,"extra":1,"format":"capgate-audit-head-v1",` + h7 + `,"seq":7}`,
		"missing seq":           `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `}`,
		"other format":          strings.Replace(good, "head-v1", "head-v2", 1),
		"seq zero":              `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `,"seq":0}`,
		"seq negative":          `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `,"seq":-7}`,
		"seq fraction":          `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `,"seq":7.5}`,
		"seq too large":         `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `,"seq":9007199254740993}`,
		"seq as string":         `{"checkpoint":null,"format":"capgate-audit-head-v1",` + h7 + `,"seq":"7"}`,
		"hash upper case":       strings.Replace(good, hashOf(7), strings.ToUpper(hashOf(7)), 1),
		"hash short":            strings.Replace(good, hashOf(7), hashOf(7)[:20], 1),
		"checkpoint above seq":  `{"checkpoint":` + cp + `,"format":"capgate-audit-head-v1","hash":"` + hashOf(4) + `","seq":4}`,
		"checkpoint other hash": `{"checkpoint":` + string(testHead(5, 5).Checkpoint.Body) + `,"format":"capgate-audit-head-v1","hash":"` + hashOf(4) + `","seq":5}`,
		"checkpoint malformed":  strings.Replace(good, `"signature":"ed25519:`, `"signature":"ed25519:A`, 1),
		"checkpoint a string":   `{"checkpoint":"x","format":"capgate-audit-head-v1",` + h7 + `,"seq":7}`,
		"array":                 `[]`,
		"trailing data":         good + `{}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseHead([]byte(in)); !errors.Is(err, ErrBadHead) {
				t.Fatalf("err = %v, want ErrBadHead", err)
			}
		})
	}
	if _, err := ParseHead([]byte(good)); err != nil {
		t.Fatalf("the good head: %v", err)
	}
}

func TestMergeHead(t *testing.T) {
	tests := []struct {
		name      string
		cur, next Head
		want      Head
		fork      bool
	}{
		{"from nothing", Head{}, testHead(3, 0), testHead(3, 0), false},
		{"forward", testHead(3, 0), testHead(5, 0), testHead(5, 0), false},
		{"never back", testHead(5, 0), testHead(3, 0), testHead(5, 0), false},
		{"checkpoint joins", testHead(5, 0), testHead(3, 3), Head{Seq: 5, Hash: hashOf(5), Checkpoint: testHead(3, 3).Checkpoint}, false},
		{"older checkpoint dropped", testHead(5, 4), testHead(6, 2), Head{Seq: 6, Hash: hashOf(6), Checkpoint: testHead(5, 4).Checkpoint}, false},
		{"same seq, other hash", testHead(5, 0), Head{Seq: 5, Hash: hashOf(4)}, testHead(5, 0), true},
		{"same checkpoint seq, other head", testHead(5, 4), Head{Seq: 5, Hash: hashOf(5), Checkpoint: SignCheckpoint(testKey(), 4, hashOf(3), time.Now())}, testHead(5, 4), true},
		{"checkpoint at the head with another hash", testHead(5, 0), Head{Seq: 3, Hash: hashOf(3), Checkpoint: SignCheckpoint(testKey(), 5, hashOf(2), time.Now())}, testHead(5, 0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeHead(tt.cur, tt.next)
			if tt.fork != errors.Is(err, ErrHeadFork) {
				t.Fatalf("err = %v, fork %v", err, tt.fork)
			}
			if !sameHead(got, tt.want) {
				t.Fatalf("merged %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHeadFileAdvance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.head")
	if _, err := ReadHeadFile(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	hf := NewHeadFile(path)
	defer hf.Close()
	for seq := int64(1); seq <= 5; seq++ {
		if _, err := hf.Advance(testHead(seq, 0), func(Head) error { return nil }); err != nil {
			t.Fatal(err)
		}
		c, err := ReadHeadFile(path)
		if err != nil || !sameHead(c.Head, testHead(seq, 0)) || len(c.Damaged) != 0 {
			t.Fatalf("after seq %d: %+v %v", seq, c, err)
		}
		// The newer head goes into the other slot, so the one before it stays whole.
		if c.Newer != int((seq+1)%2) {
			t.Fatalf("seq %d in slot %d", seq, c.Newer)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != headFileSize || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v %v", fi, err)
	}

	// Never back, and the file is not written for it.
	before, _ := os.ReadFile(path)
	if cur, err := hf.Advance(testHead(3, 0), func(Head) error { return nil }); err != nil || cur.Seq != 5 {
		t.Fatalf("advance back: %+v %v", cur, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a lower head was written")
	}
	// A head that does not lead from the one kept is refused, and the file left as evidence.
	refused := errors.New("not linked")
	if _, err := hf.Advance(testHead(9, 0), func(cur Head) error {
		if cur.Seq != 5 {
			t.Errorf("linked asked about seq %d", cur.Seq)
		}
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("unlinked head: %v", err)
	}
	if _, err := hf.Advance(Head{Seq: 5, Hash: hashOf(1)}, nil); !errors.Is(err, ErrHeadFork) {
		t.Fatalf("same seq, other hash: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused head was written")
	}

	// A torn write damages one slot: the other is read, and the next write goes over the torn one.
	c, _ := ReadHeadFile(path)
	raw, _ := os.ReadFile(path)
	torn := c.Newer ^ 1
	copy(raw[torn*headSlotSize+10:], "\x00\x00garbage")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c2, err := ReadHeadFile(path)
	if err != nil || !sameHead(c2.Head, testHead(5, 0)) || len(c2.Damaged) != 1 || c2.Damaged[0] != torn {
		t.Fatalf("one slot torn: %+v %v", c2, err)
	}
	if _, err := hf.Advance(testHead(6, 6), func(Head) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if c3, err := ReadHeadFile(path); err != nil || !sameHead(c3.Head, testHead(6, 6)) || len(c3.Damaged) != 0 {
		t.Fatalf("after the torn slot was written over: %+v %v", c3, err)
	}

	// Both slots damaged, or a file of another size: an error, and no advance over it.
	for name, content := range map[string][]byte{
		"both slots": bytes.Repeat([]byte("x"), headFileSize),
		"short":      raw[:headSlotSize],
		"long":       append(raw, '\n'),
		"empty":      nil,
	} {
		p := filepath.Join(t.TempDir(), "audit.head")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHeadFile(p); !errors.Is(err, ErrBadHead) {
			t.Errorf("%s: read %v", name, err)
		}
		if _, err := NewHeadFile(p).Advance(testHead(9, 0), nil); !errors.Is(err, ErrBadHead) {
			t.Errorf("%s: advance %v", name, err)
		}
	}
}

// TestHeadFileConcurrent advances one head file from several writers at once, each with its
// own open file (as replicas sharing a data folder do): the head never goes back, and ends at
// the highest seq any of them wrote.
func TestHeadFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.head")
	const writers, each = 4, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var back error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var last int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := ReadHeadFile(path)
			if err != nil {
				continue // not created yet
			}
			if c.Head.Seq < last {
				back = errors.New("the head went back")
			}
			last = c.Head.Seq
		}
	}()
	for w := range writers {
		wg.Go(func() {
			hf := NewHeadFile(path)
			defer hf.Close()
			for i := range each {
				seq := int64(i*writers + w + 1)
				if _, err := hf.Advance(testHead(seq, 0), func(Head) error { return nil }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-readerDone
	if back != nil {
		t.Fatal(back)
	}
	c, err := ReadHeadFile(path)
	if err != nil || c.Head.Seq != writers*each {
		t.Fatalf("final head %+v %v, want seq %d", c.Head, err, writers*each)
	}
}

// TestHeadCheckpointOnlyStatic checks that ParseHead does not verify the checkpoint's
// signature (Verify does, with the key): a head file can be read without the key.
func TestHeadCheckpointOnlyStatic(t *testing.T) {
	h := Head{Seq: 5, Hash: hashOf(5), Checkpoint: SignCheckpoint(otherKey(), 5, hashOf(5), time.Now())}
	got, err := ParseHead(appendHead(nil, h))
	if err != nil || got.Checkpoint.Seq != 5 {
		t.Fatalf("%+v %v", got, err)
	}
	if err := VerifyCheckpoint(pubOf(testKey()), got.Checkpoint); !errors.Is(err, ErrBadCheckpoint) {
		t.Fatal("a checkpoint by another key verified")
	}
}
