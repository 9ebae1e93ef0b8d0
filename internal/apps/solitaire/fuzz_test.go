package solitaire

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/capgate/capgate/sdk"
)

// FuzzPlay plays the moves a byte script describes on the deal of a seed, three bytes a move.
// No move panics, a refused move changes nothing, and the 52 cards are always all there, each
// once, in order on the foundations.
func FuzzPlay(f *testing.F) {
	f.Add(int64(1), []byte{0, 0, 0, 2, 0x64, 1, 1, 0x20, 1})
	f.Add(int64(6), []byte("\x00\x00\x00\x00\x00\x00\x09\x11\x01\x0a\x21\x02"))
	f.Add(int64(MaxSeed), []byte{})
	places := []string{"stock", "waste", "tableau", "foundation", "", "deck"}
	f.Fuzz(func(t *testing.T, seed int64, script []byte) {
		g := deal(seed, time.Unix(0, 0))
		for i := 0; i+2 < len(script) && i < 3*400; i += 3 {
			b0, b1, b2 := script[i], script[i+1], script[i+2]
			fi, ti, n := int(b1>>4)-2, int(b1&0xf)-2, int(b2)-1
			p := moveParams{From: places[int(b0>>4)%len(places)], To: places[int(b0&0xf)%len(places)], Count: &n}
			if fi >= 0 {
				p.FromIndex = &fi
			}
			if ti >= 0 {
				p.ToIndex = &ti
			}
			if b2 == 0 {
				p.Count = nil
			}
			m, err := parseMove(p)
			if err != nil {
				continue
			}
			next := g.clone()
			if err := next.apply(m, time.Unix(int64(i), 0)); err != nil {
				if _, ok := err.(ruleError); !ok {
					t.Fatalf("apply: %v is not a ruleError", err)
				}
				continue
			}
			if next.moves != g.moves+1 {
				t.Fatalf("a move counted %d", next.moves-g.moves)
			}
			g = next
			checkCards(t, g)
		}
		checkCards(t, g)
	})
}

// FuzzMoveParams sends move any params, as a host that skipped validation would: no panic,
// and a refused move changes nothing.
func FuzzMoveParams(f *testing.F) {
	for _, s := range []string{
		`{"from":"stock","to":"waste"}`, `{"from":"tableau","from_index":6,"to":"tableau","to_index":4}`,
		`{"from":"waste","to":"foundation"}`, `{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":13}`,
		`{"from":"foundation","from_index":3,"to":"tableau","to_index":0}`, `{"from":"tableau","from_index":-1}`,
		`{"count":1e99}`, `null`, `[]`, ``, `{"from":"stock","to":"waste","from":"tableau"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a := New(nil, func() time.Time { return time.Unix(0, 0) })
		a.g = deal(1, time.Unix(0, 0))
		before := stateKey(a.g)
		_, err := a.Invoke(context.Background(), MoveID, json.RawMessage(raw), sdk.InvocationContext{})
		if err != nil {
			if _, ok := err.(*sdk.Error); !ok {
				t.Fatalf("error %v is not an *sdk.Error", err)
			}
			if stateKey(a.g) != before || a.g.moves != 0 {
				t.Fatal("a refused move changed the game")
			}
			return
		}
		if a.g.moves != 1 {
			t.Fatalf("moves = %d", a.g.moves)
		}
		checkCards(t, a.g)
	})
}
