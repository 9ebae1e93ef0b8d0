package solitaire

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

func cardsOf(cs []card) []string {
	var ss []string
	for _, c := range cs {
		ss = append(ss, c.String())
	}
	return ss
}

// The deal of seed 1, pinned: a change to the deck order, the shuffle or the dealing shows
// here, and would change every seed's game.
func TestDealSeed1(t *testing.T) {
	g := deal(1, time.Unix(0, 0))
	want := [7][]string{
		{"6S"},
		{"8C", "3S"},
		{"9C", "5H", "QC"},
		{"9D", "10S", "10D", "KC"},
		{"7D", "2D", "AC", "3D", "QD"},
		{"KD", "7S", "AS", "2S", "6D", "2H"},
		{"5S", "3C", "5D", "JH", "KS", "JD", "JC"},
	}
	for i, p := range g.tableau {
		if got := cardsOf(p.cards); !slices.Equal(got, want[i]) || p.down != i {
			t.Errorf("pile %d = %v (%d down), want %v (%d down)", i, got, p.down, want[i], i)
		}
	}
	stock := []string{"7H", "4S", "9H", "4H", "QS", "JS", "4D", "3H", "10C", "9S", "7C", "KH",
		"4C", "8D", "6C", "AD", "8S", "QH", "AH", "8H", "2C", "10H", "5C", "6H"}
	if got := cardsOf(g.stock); !slices.Equal(got, stock) {
		t.Errorf("stock = %v", got)
	}
}

func TestDealInvariants(t *testing.T) {
	for _, seed := range append([]int64{0, MaxSeed, MaxSeed - 1}, rangeSeeds(1, 300)...) {
		g := deal(seed, time.Unix(0, 0))
		checkCards(t, g)
		for i, p := range g.tableau {
			if len(p.cards) != i+1 || p.down != i {
				t.Fatalf("seed %d pile %d: %d cards, %d down", seed, i, len(p.cards), p.down)
			}
		}
		if len(g.stock) != 24 || len(g.waste) != 0 || g.moves != 0 || g.won() {
			t.Fatalf("seed %d: stock %d waste %d", seed, len(g.stock), len(g.waste))
		}
		if again := deal(seed, time.Unix(0, 0)); stateKey(again) != stateKey(g) {
			t.Fatalf("seed %d deals two games", seed)
		}
	}
	if stateKey(deal(1, time.Time{})) == stateKey(deal(2, time.Time{})) {
		t.Fatal("seeds 1 and 2 deal the same game")
	}
}

func rangeSeeds(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// checkCards checks that g holds each of the 52 cards once and every non-empty pile shows its
// top card.
func checkCards(t testing.TB, g *game) {
	t.Helper()
	seen := map[card]bool{}
	add := func(cs []card) {
		for _, c := range cs {
			if c.rank < ace || c.rank > king || c.suit > spades || seen[c] {
				t.Fatalf("card %v twice or invalid", c)
			}
			seen[c] = true
		}
	}
	for _, p := range g.tableau {
		add(p.cards)
		if len(p.cards) > 0 && p.down >= len(p.cards) || p.down < 0 {
			t.Fatalf("a pile with %d cards has %d face down", len(p.cards), p.down)
		}
	}
	add(g.stock)
	add(g.waste)
	for _, f := range g.found {
		add(f)
		for i, c := range f {
			if int(c.rank) != i+1 || c.suit != f[0].suit {
				t.Fatalf("foundation out of order: %v", cardsOf(f))
			}
		}
	}
	if len(seen) != 52 {
		t.Fatalf("%d cards", len(seen))
	}
}

func paramsOf(m move) json.RawMessage {
	names := map[place]string{atStock: "stock", atWaste: "waste", atTableau: "tableau", atFoundation: "foundation"}
	p := map[string]any{"from": names[m.from], "to": names[m.to]}
	if m.fromIndex >= 0 {
		p["from_index"] = m.fromIndex
	}
	if m.toIndex >= 0 {
		p["to_index"] = m.toIndex
	}
	if m.count > 1 {
		p["count"] = m.count
	}
	b, _ := json.Marshal(p)
	return b
}

// A whole game, won: the solver finds the moves on the model, and they are played through the
// app as an agent plays them, each checked by the manifest's schemas.
func TestWinAGame(t *testing.T) {
	doc, err := manifest.Load([]byte(Manifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []int64{6, 11, 19, 22} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			moves := solve(deal(seed, time.Time{}), 50000)
			if moves == nil {
				t.Fatal("the solver found no win")
			}
			clock := time.Unix(1_700_000_000, 0)
			a := New(doc, func() time.Time { return clock })
			ctx := context.Background()
			invoke := func(id string, params json.RawMessage) stateView {
				t.Helper()
				if err := sdk.DefaultValidateParams(doc, id, params); err != nil {
					t.Fatalf("%s: %v", params, err)
				}
				res, err := a.Invoke(ctx, id, params, sdk.InvocationContext{})
				if err != nil {
					t.Fatalf("%s: %v", params, err)
				}
				if err := doc.ReturnsSchema(id).ValidateJSON(res.Data, "result"); err != nil {
					t.Fatalf("%s: result breaks the schema: %v", params, err)
				}
				var v stateView
				if err := json.Unmarshal(res.Data, &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			invoke(NewGameID, json.RawMessage(fmt.Sprintf(`{"seed":%d}`, seed)))
			var v stateView
			for i, m := range moves {
				clock = clock.Add(time.Second)
				v = invoke(MoveID, paramsOf(m))
				if v.Moves != i+1 {
					t.Fatalf("moves = %d after %d", v.Moves, i+1)
				}
				a.mu.Lock()
				checkCards(t, a.g)
				a.mu.Unlock()
			}
			if !v.Won || v.InProgress || v.CardsRemaining != 0 || v.TimeElapsed != int64(len(moves)) {
				t.Fatalf("after the last move: %+v", v)
			}
			for _, f := range v.Foundations {
				if f == nil || (*f)[0] != 'K' {
					t.Fatalf("foundations = %v", v.Foundations)
				}
			}
			// The clock stops at the win, and no move is left.
			clock = clock.Add(time.Hour)
			if v := invoke(GetGameStateID, json.RawMessage(`{}`)); v.TimeElapsed != int64(len(moves)) {
				t.Fatalf("time_elapsed runs on after the win: %d", v.TimeElapsed)
			}
			_, err := a.Invoke(ctx, MoveID, json.RawMessage(`{"from":"stock","to":"waste"}`), sdk.InvocationContext{})
			if e, ok := err.(*sdk.Error); !ok || e.Reason != "the game is won; deal a new one with new_game" {
				t.Fatalf("a move after the win: %v", err)
			}
		})
	}
}
