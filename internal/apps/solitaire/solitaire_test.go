package solitaire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/solitaire"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

type pile struct {
	FaceDown int      `json:"face_down"`
	FaceUp   []string `json:"face_up"`
}

type state struct {
	InProgress     bool      `json:"in_progress"`
	Moves          int       `json:"moves"`
	TimeElapsed    int64     `json:"time_elapsed"`
	CardsRemaining int       `json:"cards_remaining"`
	Won            bool      `json:"won"`
	Seed           int64     `json:"seed"`
	Tableau        []pile    `json:"tableau"`
	WasteTop       *string   `json:"waste_top"`
	WasteCount     int       `json:"waste_count"`
	StockCount     int       `json:"stock_count"`
	Foundations    []*string `json:"foundations"`
}

func (s state) tops() []string {
	var ts []string
	for _, p := range s.Tableau {
		if len(p.FaceUp) > 0 {
			ts = append(ts, p.FaceUp[len(p.FaceUp)-1])
		} else {
			ts = append(ts, "-")
		}
	}
	return ts
}

func (s state) foundation(i int) string {
	if s.Foundations[i] == nil {
		return "-"
	}
	return *s.Foundations[i]
}

type fixture struct {
	t     *testing.T
	app   *solitaire.App
	doc   *manifest.Document
	clock time.Time
	mu    sync.Mutex
}

func load(t testing.TB) *manifest.Document {
	t.Helper()
	doc, err := manifest.Load([]byte(solitaire.Manifest))
	if err != nil {
		t.Fatalf("manifest.Load: %v", err)
	}
	return doc
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, doc: load(t), clock: time.Unix(1_700_000_000, 0)}
	f.app = solitaire.New(f.doc, f.now)
	return f
}

func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clock
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.clock = f.clock.Add(d)
	f.mu.Unlock()
}

// call validates params as the gateway does, invokes, checks the result against the returns
// schema as the gateway does, and returns the state and the undo token.
func (f *fixture) call(id, params string) (state, string, error) {
	f.t.Helper()
	if err := sdk.DefaultValidateParams(f.doc, id, json.RawMessage(params)); err != nil {
		return state{}, "", err
	}
	res, err := f.app.Invoke(context.Background(), id, json.RawMessage(params), sdk.InvocationContext{Source: sdk.SourceAgent, AppID: solitaire.AppID})
	if err != nil {
		return state{}, "", err
	}
	if err := f.doc.ReturnsSchema(id).ValidateJSON(res.Data, "result"); err != nil {
		f.t.Fatalf("result %s breaks the returns schema: %v", res.Data, err)
	}
	var s state
	if err := json.Unmarshal(res.Data, &s); err != nil {
		f.t.Fatal(err)
	}
	return s, res.UndoToken, nil
}

func (f *fixture) must(id, params string) state {
	f.t.Helper()
	s, _, err := f.call(id, params)
	if err != nil {
		f.t.Fatalf("%s %s: %v", id, params, err)
	}
	return s
}

func (f *fixture) state() state { return f.must(solitaire.GetGameStateID, `{}`) }

// stateIs fails the test, with what says what happened, unless the game is want.
func (f *fixture) stateIs(want state, what string) {
	f.t.Helper()
	if got := f.state(); !reflect.DeepEqual(got, want) {
		f.t.Fatalf("%s:\n%+v\nwant %+v", what, got, want)
	}
}

// build sets a layout whose foundation i holds suit i (C, D, H, S) from the Ace up to
// levels[i]; every card not placed there, on the tableau or in the waste goes to the stock, and
// beneath the waste what the stock cannot hold.
func (f *fixture) build(levels [4]int, tableau [7]solitaire.PileLayout, waste ...string) {
	f.t.Helper()
	l := solitaire.Layout{Tableau: tableau, Waste: waste}
	used := map[string]bool{}
	for _, c := range waste {
		used[c] = true
	}
	for _, p := range tableau {
		for _, c := range append(slices.Clone(p.Down), p.Up...) {
			used[c] = true
		}
	}
	ranks := []string{"A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"}
	for i, s := range []string{"C", "D", "H", "S"} {
		for r, rank := range ranks {
			c := rank + s
			switch {
			case r < levels[i]:
				l.Foundations[i] = append(l.Foundations[i], c)
			case !used[c]:
				l.Stock = append(l.Stock, c)
			}
		}
	}
	if n := len(l.Stock) - 24; n > 0 { // a stock holds at most 24: the rest lies under the waste
		l.Waste = append(slices.Clone(l.Stock[:n]), l.Waste...)
		l.Stock = l.Stock[n:]
	}
	if err := f.app.SetLayout(l); err != nil {
		f.t.Fatal(err)
	}
}

func up(cards ...string) solitaire.PileLayout { return solitaire.PileLayout{Up: cards} }

func TestManifest(t *testing.T) {
	m := load(t).Manifest()
	if m.AppID != solitaire.AppID || solitaire.Alias != "solitaire" {
		t.Fatalf("app_id = %s", m.AppID)
	}
	for id, method := range map[string]string{solitaire.GetGameStateID: "get_game_state", solitaire.NewGameID: "new_game", solitaire.MoveID: "move"} {
		if id != "solitaire."+solitaire.AppID+"."+method {
			t.Errorf("%s is not {alias}.{app_id}.%s", id, method)
		}
	}
	type want struct {
		perm string
		se   manifest.SideEffect
		undo bool
	}
	wants := map[string]want{
		solitaire.GetGameStateID: {"app.solitaire.read", manifest.SideEffectRead, false},
		solitaire.NewGameID:      {"app.solitaire.play", manifest.SideEffectWrite, true},
		solitaire.MoveID:         {"app.solitaire.play", manifest.SideEffectWrite, true},
	}
	if len(m.Capabilities) != len(wants) {
		t.Fatalf("%d capabilities", len(m.Capabilities))
	}
	for _, c := range m.Capabilities {
		w := wants[c.ID]
		if c.Permission != w.perm || c.SideEffects != w.se || c.Risk != manifest.RiskLow || c.AuthLevel != manifest.AuthUser {
			t.Errorf("%s: permission %s side effects %s risk %s", c.ID, c.Permission, c.SideEffects, c.Risk)
		}
		hasUndo := c.UndoWindowMS != nil && *c.UndoWindowMS == solitaire.UndoWindowMS && c.Reversibility == manifest.Reversible
		if hasUndo != w.undo {
			t.Errorf("%s: undo window %v, reversibility %s", c.ID, c.UndoWindowMS, c.Reversibility)
		}
	}
}

func TestNewGame(t *testing.T) {
	f := newFixture(t)
	start := f.state()
	if start.Seed < 0 || start.Seed > solitaire.MaxSeed || start.Moves != 0 || !start.InProgress || start.CardsRemaining != 52 {
		t.Fatalf("the first game: %+v", start)
	}
	s := f.must(solitaire.NewGameID, `{"seed":1}`)
	if want := []string{"6S", "3S", "QC", "KC", "QD", "2H", "JC"}; !slices.Equal(s.tops(), want) {
		t.Fatalf("seed 1 tops = %v, want %v", s.tops(), want)
	}
	for i, p := range s.Tableau {
		if p.FaceDown != i || len(p.FaceUp) != 1 {
			t.Fatalf("pile %d: %+v", i, p)
		}
	}
	if s.Seed != 1 || s.StockCount != 24 || s.WasteCount != 0 || s.WasteTop != nil || s.Moves != 0 || s.Won {
		t.Fatalf("seed 1: %+v", s)
	}
	for i := range 4 {
		if s.Foundations[i] != nil {
			t.Fatalf("foundations = %v", s.Foundations)
		}
	}
	// The same seed deals the same game; a game in progress is replaced.
	f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	if again := f.must(solitaire.NewGameID, `{"seed":1}`); !reflect.DeepEqual(again, s) {
		t.Fatalf("seed 1 dealt again: %+v", again)
	}
	big := f.must(solitaire.NewGameID, fmt.Sprintf(`{"seed":%d}`, solitaire.MaxSeed))
	if big.Seed != solitaire.MaxSeed {
		t.Fatalf("seed = %d", big.Seed)
	}
	// Without a seed, a random one, which the state tells so the game can be dealt again.
	r1 := f.must(solitaire.NewGameID, `{}`)
	r2 := f.must(solitaire.NewGameID, ``)
	if r1.Seed == r2.Seed {
		t.Fatalf("two random deals with seed %d", r1.Seed)
	}
	if again := f.must(solitaire.NewGameID, fmt.Sprintf(`{"seed":%d}`, r2.Seed)); !reflect.DeepEqual(again.Tableau, r2.Tableau) {
		t.Fatal("a random game's seed does not deal it again")
	}
}

func TestTimeElapsed(t *testing.T) {
	f := newFixture(t)
	f.must(solitaire.NewGameID, `{"seed":3}`)
	f.advance(90*time.Second + 900*time.Millisecond)
	if s := f.state(); s.TimeElapsed != 90 {
		t.Fatalf("time_elapsed = %d", s.TimeElapsed)
	}
	f.must(solitaire.NewGameID, `{"seed":3}`)
	if s := f.state(); s.TimeElapsed != 0 {
		t.Fatalf("a new game's time_elapsed = %d", s.TimeElapsed)
	}
	f.advance(-time.Hour) // a clock stepped back never gives a negative time
	if s := f.state(); s.TimeElapsed != 0 {
		t.Fatalf("time_elapsed = %d", s.TimeElapsed)
	}
}

func TestStockAndWaste(t *testing.T) {
	f := newFixture(t)
	f.must(solitaire.NewGameID, `{"seed":1}`)
	s := f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	if s.WasteTop == nil || *s.WasteTop != "6H" || s.StockCount != 23 || s.WasteCount != 1 || s.Moves != 1 {
		t.Fatalf("after a draw: %+v", s)
	}
	s = f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	if *s.WasteTop != "5C" {
		t.Fatalf("second draw: %v", *s.WasteTop)
	}
	for range 22 {
		s = f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	}
	if s.StockCount != 0 || s.WasteCount != 24 || *s.WasteTop != "7H" {
		t.Fatalf("stock drawn out: %+v", s)
	}
	// The stock empty, a draw turns the waste over; the first card drawn is drawn first again.
	s = f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	if s.StockCount != 24 || s.WasteCount != 0 || s.WasteTop != nil || s.Moves != 25 {
		t.Fatalf("after turning the waste over: %+v", s)
	}
	if s = f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`); *s.WasteTop != "6H" {
		t.Fatalf("the waste turned over in the wrong order: %v", *s.WasteTop)
	}
}

func TestLegalMoves(t *testing.T) {
	tests := []struct {
		name    string
		levels  [4]int
		tableau [7]solitaire.PileLayout
		waste   []string
		move    string
		check   func(t *testing.T, s state)
	}{
		{
			name: "waste to tableau", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{up("KS")}, waste: []string{"JC", "QH"},
			move: `{"from":"waste","to":"tableau","to_index":0}`,
			check: func(t *testing.T, s state) {
				if !slices.Equal(s.Tableau[0].FaceUp, []string{"KS", "QH"}) || *s.WasteTop != "JC" || s.WasteCount != 1 {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "a King from the waste to an empty pile", levels: [4]int{8, 8, 8, 8},
			waste: []string{"KD"}, move: `{"from":"waste","to":"tableau","to_index":3}`,
			check: func(t *testing.T, s state) {
				if !slices.Equal(s.Tableau[3].FaceUp, []string{"KD"}) || s.WasteTop != nil {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "waste to foundation", levels: [4]int{8, 8, 8, 8},
			waste: []string{"9H"}, move: `{"from":"waste","to":"foundation","to_index":2}`,
			check: func(t *testing.T, s state) {
				if s.foundation(2) != "9H" || s.CardsRemaining != 19 {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "waste to the foundation of its suit, found by the game", levels: [4]int{8, 8, 8, 8},
			waste: []string{"9S"}, move: `{"from":"waste","to":"foundation"}`,
			check: func(t *testing.T, s state) {
				if s.foundation(3) != "9S" {
					t.Fatalf("%+v", s.Foundations)
				}
			},
		},
		{
			name: "an Ace to the first empty foundation, found by the game", levels: [4]int{8, 0, 8, 0},
			waste: []string{"AS"}, move: `{"from":"waste","to":"foundation"}`,
			check: func(t *testing.T, s state) {
				if s.foundation(1) != "AS" || s.foundation(3) != "-" {
					t.Fatalf("%v %v", s.foundation(1), s.foundation(3))
				}
			},
		},
		{
			name: "tableau to tableau turns up the card beneath", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{{Down: []string{"KC", "QC"}, Up: []string{"10D"}}, up("JS")},
			move:    `{"from":"tableau","from_index":0,"to":"tableau","to_index":1}`,
			check: func(t *testing.T, s state) {
				if !slices.Equal(s.Tableau[1].FaceUp, []string{"JS", "10D"}) ||
					!slices.Equal(s.Tableau[0].FaceUp, []string{"QC"}) || s.Tableau[0].FaceDown != 1 {
					t.Fatalf("%+v", s.Tableau)
				}
			},
		},
		{
			name: "a run of three", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{{Down: []string{"KH"}, Up: []string{"KS", "QD", "JC", "10H"}}, up("QH"), up("KC")},
			move:    `{"from":"tableau","from_index":0,"to":"tableau","to_index":2,"count":3}`,
			check: func(t *testing.T, s state) {
				if !slices.Equal(s.Tableau[2].FaceUp, []string{"KC", "QD", "JC", "10H"}) ||
					!slices.Equal(s.Tableau[0].FaceUp, []string{"KS"}) || s.Tableau[0].FaceDown != 1 {
					t.Fatalf("%+v", s.Tableau)
				}
			},
		},
		{
			name: "a King run to an empty pile", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{{Down: []string{"QC"}, Up: []string{"KH", "QS", "JD"}}},
			move:    `{"from":"tableau","from_index":0,"to":"tableau","to_index":6,"count":3}`,
			check: func(t *testing.T, s state) {
				if !slices.Equal(s.Tableau[6].FaceUp, []string{"KH", "QS", "JD"}) ||
					!slices.Equal(s.Tableau[0].FaceUp, []string{"QC"}) || s.Tableau[0].FaceDown != 0 {
					t.Fatalf("%+v", s.Tableau)
				}
			},
		},
		{
			name: "tableau to foundation", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{{Down: []string{"KC"}, Up: []string{"9C"}}},
			move:    `{"from":"tableau","from_index":0,"to":"foundation","to_index":0}`,
			check: func(t *testing.T, s state) {
				if s.foundation(0) != "9C" || !slices.Equal(s.Tableau[0].FaceUp, []string{"KC"}) {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "foundation to tableau", levels: [4]int{8, 8, 8, 8},
			tableau: [7]solitaire.PileLayout{4: up("9S")},
			move:    `{"from":"foundation","from_index":1,"to":"tableau","to_index":4}`,
			check: func(t *testing.T, s state) {
				if s.foundation(1) != "7D" || !slices.Equal(s.Tableau[4].FaceUp, []string{"9S", "8D"}) {
					t.Fatalf("%+v", s)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.build(tt.levels, tt.tableau, tt.waste...)
			s := f.must(solitaire.MoveID, tt.move)
			if s.Moves != 1 {
				t.Fatalf("moves = %d", s.Moves)
			}
			tt.check(t, s)
		})
	}
}

func TestIllegalMoves(t *testing.T) {
	base := [4]int{8, 8, 8, 8}
	tests := []struct {
		name    string
		levels  [4]int
		tableau [7]solitaire.PileLayout
		waste   []string
		move    string
		rule    string
	}{
		{"black on black", base, [7]solitaire.PileLayout{up("KC")}, []string{"QS"},
			`{"from":"waste","to":"tableau","to_index":0}`, "a black Queen goes only on a red King"},
		{"red on red", base, [7]solitaire.PileLayout{up("KD")}, []string{"QH"},
			`{"from":"waste","to":"tableau","to_index":0}`, "a red Queen goes only on a black King"},
		{"not one rank lower", base, [7]solitaire.PileLayout{up("JS")}, []string{"9H"},
			`{"from":"waste","to":"tableau","to_index":0}`, "a red 9 goes only on a black 10"},
		{"higher rank", base, [7]solitaire.PileLayout{up("9S")}, []string{"10H"},
			`{"from":"waste","to":"tableau","to_index":0}`, "a red 10 goes only on a black Jack"},
		{"a Queen to an empty pile", base, [7]solitaire.PileLayout{}, []string{"QH"},
			`{"from":"waste","to":"tableau","to_index":2}`, "only a King goes on an empty tableau pile"},
		{"a King on a card", base, [7]solitaire.PileLayout{up("QS")}, []string{"KH"},
			`{"from":"waste","to":"tableau","to_index":0}`, "a King goes only on an empty tableau pile"},
		{"a run onto the same colour", base, [7]solitaire.PileLayout{up("KS", "QH", "JS"), up("KD")}, nil,
			`{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":2}`, "a red Queen goes only on a black King"},
		{"a foundation without its Ace", [4]int{0, 8, 8, 8}, [7]solitaire.PileLayout{}, []string{"2C"},
			`{"from":"waste","to":"foundation","to_index":0}`, "foundation needs an Ace first"},
		{"the game finds no foundation for the suit", [4]int{0, 8, 8, 8}, [7]solitaire.PileLayout{}, []string{"5C"},
			`{"from":"waste","to":"foundation"}`, "foundation needs an Ace first"},
		{"skipping a rank", base, [7]solitaire.PileLayout{up("10H")}, nil,
			`{"from":"tableau","from_index":0,"to":"foundation","to_index":2}`, "this foundation takes only 9H next"},
		{"another suit", base, [7]solitaire.PileLayout{}, []string{"9C"},
			`{"from":"waste","to":"foundation","to_index":2}`, "this foundation takes only 9H next"},
		{"an Ace on a started foundation", [4]int{8, 8, 8, 0}, [7]solitaire.PileLayout{}, []string{"AS"},
			`{"from":"waste","to":"foundation","to_index":1}`, "this foundation takes only 9D next"},
		{"a complete foundation", [4]int{13, 8, 8, 8}, [7]solitaire.PileLayout{}, []string{"9H"},
			`{"from":"waste","to":"foundation","to_index":0}`, "this foundation is complete"},
		{"the waste empty", base, [7]solitaire.PileLayout{}, nil,
			`{"from":"waste","to":"tableau","to_index":0}`, "the waste is empty"},
		{"stock and waste empty", [4]int{13, 13, 13, 12}, [7]solitaire.PileLayout{up("KS")}, nil,
			`{"from":"stock","to":"waste"}`, "the stock and the waste are both empty"},
		{"an empty pile", base, [7]solitaire.PileLayout{up("KS")}, nil,
			`{"from":"tableau","from_index":3,"to":"tableau","to_index":0}`, "tableau pile 3 is empty"},
		{"more cards than face up", base, [7]solitaire.PileLayout{{Down: []string{"9C"}, Up: []string{"KS"}}}, nil,
			`{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":2}`, "tableau pile 0 has only 1 face-up card"},
		{"a broken run", base, [7]solitaire.PileLayout{up("KS", "JD")}, nil,
			`{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":2}`, "the cards moved together must descend in alternating colours"},
		{"an empty foundation", [4]int{8, 8, 0, 8}, [7]solitaire.PileLayout{up("KS")}, nil,
			`{"from":"foundation","from_index":2,"to":"tableau","to_index":0}`, "foundation 2 is empty"},
		{"foundation card onto the same colour", base, [7]solitaire.PileLayout{up("9D")}, nil,
			`{"from":"foundation","from_index":2,"to":"tableau","to_index":0}`, "a red 8 goes only on a black 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.build(tt.levels, tt.tableau, tt.waste...)
			before := f.state()
			_, tok, err := f.call(solitaire.MoveID, tt.move)
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeExecutionFailed || !e.Recoverable || e.Reason != tt.rule {
				t.Fatalf("err = %#v, want a recoverable execution failure %q", err, tt.rule)
			}
			if tok != "" {
				t.Fatal("an illegal move has an undo token")
			}
			f.stateIs(before, "an illegal move changed the game")
		})
	}
}

func TestParamErrors(t *testing.T) {
	tests := []struct{ name, id, params, path, rule string }{
		// Refused by the schema.
		{"from missing", solitaire.MoveID, `{"to":"waste"}`, "", ""},
		{"unknown place", solitaire.MoveID, `{"from":"deck","to":"waste"}`, "from", ""},
		{"other case", solitaire.MoveID, `{"from":"Tableau","from_index":0,"to":"foundation"}`, "from", ""},
		{"padded", solitaire.MoveID, `{"from":"stock ","to":"waste"}`, "from", ""},
		{"NUL", solitaire.MoveID, `{"from":"stock\u0000","to":"waste"}`, "from", ""},
		{"to the stock", solitaire.MoveID, `{"from":"waste","to":"stock"}`, "to", ""},
		{"index too high", solitaire.MoveID, `{"from":"tableau","from_index":7,"to":"foundation"}`, "from_index", ""},
		{"index negative", solitaire.MoveID, `{"from":"tableau","from_index":-1,"to":"foundation"}`, "from_index", ""},
		{"index a string", solitaire.MoveID, `{"from":"tableau","from_index":"0","to":"foundation"}`, "from_index", ""},
		{"index a fraction", solitaire.MoveID, `{"from":"tableau","from_index":0.5,"to":"foundation"}`, "from_index", ""},
		{"count zero", solitaire.MoveID, `{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":0}`, "count", ""},
		{"count 14", solitaire.MoveID, `{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":14}`, "count", ""},
		{"extra member", solitaire.MoveID, `{"from":"stock","to":"waste","cheat":true}`, "", ""},
		{"duplicate member", solitaire.MoveID, `{"from":"stock","to":"waste","to":"tableau"}`, "", ""},
		{"not JSON", solitaire.MoveID, `{"from":`, "", ""},
		{"seed negative", solitaire.NewGameID, `{"seed":-1}`, "seed", ""},
		{"seed beyond 2^53-1", solitaire.NewGameID, `{"seed":9007199254740992}`, "seed", ""},
		{"seed a string", solitaire.NewGameID, `{"seed":"1"}`, "seed", ""},
		{"seed a fraction", solitaire.NewGameID, `{"seed":1.5}`, "seed", ""},
		{"get_game_state takes nothing", solitaire.GetGameStateID, `{"seed":1}`, "", ""},
		// Refused by the app.
		{"stock to tableau", solitaire.MoveID, `{"from":"stock","to":"tableau","to_index":0}`, "to", "cards from the stock go only to the waste"},
		{"waste to waste", solitaire.MoveID, `{"from":"waste","to":"waste"}`, "to", "cards from the waste go to a tableau pile or a foundation"},
		{"tableau to waste", solitaire.MoveID, `{"from":"tableau","from_index":0,"to":"waste"}`, "to", "cards from a tableau pile go to another tableau pile or a foundation"},
		{"foundation to foundation", solitaire.MoveID, `{"from":"foundation","from_index":0,"to":"foundation","to_index":1}`, "to", "cards from a foundation go only to a tableau pile"},
		{"index for the stock", solitaire.MoveID, `{"from":"stock","from_index":0,"to":"waste"}`, "from_index", "only for a tableau pile or a foundation"},
		{"index for the waste", solitaire.MoveID, `{"from":"stock","to":"waste","to_index":0}`, "to_index", "only for a tableau pile or a foundation"},
		{"pile missing", solitaire.MoveID, `{"from":"tableau","to":"foundation"}`, "from_index", "required for a tableau pile or a foundation"},
		{"target pile missing", solitaire.MoveID, `{"from":"waste","to":"tableau"}`, "to_index", "required for a tableau pile or a foundation"},
		{"foundation 4", solitaire.MoveID, `{"from":"foundation","from_index":4,"to":"tableau","to_index":0}`, "from_index", "must be a foundation from 0 to 3"},
		{"to foundation 6", solitaire.MoveID, `{"from":"waste","to":"foundation","to_index":6}`, "to_index", "must be a foundation from 0 to 3"},
		{"a run from the waste", solitaire.MoveID, `{"from":"waste","to":"tableau","to_index":0,"count":2}`, "count", "more than one card moves only from a tableau pile to another"},
		{"a run to a foundation", solitaire.MoveID, `{"from":"tableau","from_index":0,"to":"foundation","count":2}`, "count", "more than one card moves only from a tableau pile to another"},
		{"onto itself", solitaire.MoveID, `{"from":"tableau","from_index":2,"to":"tableau","to_index":2}`, "to_index", "must differ from from_index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.must(solitaire.NewGameID, `{"seed":1}`)
			before := f.state()
			_, _, err := f.call(tt.id, tt.params)
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams {
				t.Fatalf("err = %v, want invalid params", err)
			}
			if tt.path != "" && (len(e.Problems) == 0 || e.Problems[0].Path != tt.path) {
				t.Fatalf("problems = %v, want path %s", e.Problems, tt.path)
			}
			if tt.rule != "" && e.Problems[0].Rule != tt.rule {
				t.Fatalf("rule = %q, want %q", e.Problems[0].Rule, tt.rule)
			}
			if strings.Contains(err.Error(), "cheat") || strings.Contains(err.Error(), "deck") {
				t.Fatalf("the error echoes the value: %v", err)
			}
			f.stateIs(before, "a refused call changed the game")
		})
	}
}

// A host that skips validation gets refusals from the app itself, never a panic.
func TestInvokeWithoutValidation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, p := range []string{`null`, `[]`, `"stock"`, `{"from":"STOCK","to":"waste"}`, `{"from":"tableau","from_index":99,"to":"foundation"}`,
		`{"from":"tableau","from_index":-5,"to":"tableau","to_index":1}`, `{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":1000000}`,
		`{"from":"tableau","from_index":0,"to":"tableau","to_index":1,"count":-1}`, `{"from":"foundation","from_index":3,"to":"tableau","to_index":9}`} {
		_, err := f.app.Invoke(ctx, solitaire.MoveID, json.RawMessage(p), sdk.InvocationContext{})
		var e *sdk.Error
		if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	for _, p := range []string{`{"seed":-1}`, `{"seed":9007199254740992}`, `{"seed":"x"}`, `[]`} {
		if _, err := f.app.Invoke(ctx, solitaire.NewGameID, json.RawMessage(p), sdk.InvocationContext{}); !isCode(err, sdk.CodeInvalidParams) {
			t.Errorf("new_game %s: err = %v", p, err)
		}
	}
	if _, err := f.app.Invoke(ctx, "solitaire.org.capgate.solitaire.cheat", nil, sdk.InvocationContext{}); !isCode(err, sdk.CodeNotFound) {
		t.Errorf("unknown capability: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.app.Invoke(done, solitaire.MoveID, json.RawMessage(`{"from":"stock","to":"waste"}`), sdk.InvocationContext{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if s := f.state(); s.Moves != 0 {
		t.Fatalf("refused calls made %d moves", s.Moves)
	}
}

func isCode(err error, c sdk.Code) bool {
	var e *sdk.Error
	return errors.As(err, &e) && e.Code == c
}

func TestUndo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ic := sdk.InvocationContext{Source: sdk.SourceUser}
	dealt := f.must(solitaire.NewGameID, `{"seed":1}`)
	_, tok1, err := f.call(solitaire.MoveID, `{"from":"tableau","from_index":6,"to":"tableau","to_index":4}`) // JC on QD
	if err != nil {
		t.Fatal(err)
	}
	afterFirst := f.state()
	if !slices.Equal(afterFirst.Tableau[6].FaceUp, []string{"JD"}) || afterFirst.Tableau[6].FaceDown != 5 {
		t.Fatalf("JC on QD: %+v", afterFirst.Tableau)
	}
	_, tok2, err := f.call(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	if err != nil || tok1 == "" || tok2 == "" || tok1 == tok2 {
		t.Fatalf("tokens %q %q, %v", tok1, tok2, err)
	}
	// Most recent first: the first move cannot be undone under the second.
	err = f.app.Undo(ctx, solitaire.MoveID, tok1, ic)
	if e, ok := err.(*sdk.Error); !ok || !e.Recoverable || e.Reason != "the game has changed since; undo the later moves first" {
		t.Fatalf("undo under a later move: %v", err)
	}
	if err := f.app.Undo(ctx, solitaire.MoveID, tok2, ic); err != nil {
		t.Fatal(err)
	}
	f.stateIs(afterFirst, "after undoing the draw")
	if err := f.app.Undo(ctx, solitaire.MoveID, tok2, ic); err == nil {
		t.Fatal("one undo token used twice")
	}
	if err := f.app.Undo(ctx, solitaire.MoveID, tok1, ic); err != nil {
		t.Fatal(err)
	}
	f.stateIs(dealt, "after undoing both")

	// A new game undone brings the game before it back, moves and all.
	f.must(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	before := f.state()
	_, tok, err := f.call(solitaire.NewGameID, `{"seed":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.app.Undo(ctx, solitaire.MoveID, tok, ic); err == nil {
		t.Fatal("a new_game token undid as a move")
	}
	if err := f.app.Undo(ctx, solitaire.NewGameID, tok, ic); err != nil {
		t.Fatal(err)
	}
	f.stateIs(before, "after undoing new_game")

	// Tokens that are not this app's records.
	other := solitaire.New(f.doc, f.now)
	_, foreign, _ := (&fixture{t: t, app: other, doc: f.doc}).call(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
	inst, _, _ := strings.Cut(tok, ".")
	for _, bad := range []string{"", "x", ".", "1", inst, inst + ".", inst + ".99999", inst + ".-1", inst + ".1.2", foreign} {
		if err := f.app.Undo(ctx, solitaire.MoveID, bad, ic); !isCode(err, sdk.CodeExecutionFailed) {
			t.Errorf("undo %q: %v", bad, err)
		}
	}
	if err := f.app.Undo(ctx, solitaire.GetGameStateID, tok, ic); !isCode(err, sdk.CodeNotFound) {
		t.Errorf("undo of a read: %v", err)
	}
	f.stateIs(before, "a refused undo changed the game")
}

func TestUndoForgetsTheOldest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.must(solitaire.NewGameID, `{"seed":1}`)
	var toks []string
	for range solitaire.MaxUndoRecords + 1 {
		_, tok, err := f.call(solitaire.MoveID, `{"from":"stock","to":"waste"}`)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	for i := len(toks) - 1; i >= 1; i-- {
		if err := f.app.Undo(ctx, solitaire.MoveID, toks[i], sdk.InvocationContext{}); err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
	}
	err := f.app.Undo(ctx, solitaire.MoveID, toks[0], sdk.InvocationContext{})
	if e, ok := err.(*sdk.Error); !ok || e.Reason != "the undo record is gone: it was undone already or is too old" {
		t.Fatalf("undo of a forgotten record: %v", err)
	}
	if s := f.state(); s.Moves != 1 {
		t.Fatalf("moves = %d", s.Moves)
	}
}

// Agents play, read and undo at once; run with -race. Every state read is whole: the cards
// drawn and the cards left in the stock always add up.
func TestConcurrent(t *testing.T) {
	f := newFixture(t)
	f.must(solitaire.NewGameID, `{"seed":1}`)
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		moves int
	)
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 40 {
				res, err := f.app.Invoke(ctx, solitaire.MoveID, json.RawMessage(`{"from":"stock","to":"waste"}`), sdk.InvocationContext{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				moves++
				mu.Unlock()
				// Undo races the other players: it succeeds only when no move came between.
				if f.app.Undo(ctx, solitaire.MoveID, res.UndoToken, sdk.InvocationContext{}) == nil {
					mu.Lock()
					moves--
					mu.Unlock()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 40 {
				res, err := f.app.Invoke(ctx, solitaire.GetGameStateID, nil, sdk.InvocationContext{})
				if err != nil {
					t.Error(err)
					return
				}
				var s state
				_ = json.Unmarshal(res.Data, &s)
				if s.StockCount+s.WasteCount != 24 {
					t.Errorf("a torn state: stock %d waste %d", s.StockCount, s.WasteCount)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := f.state(); s.Moves != moves {
		t.Fatalf("moves = %d, want %d", s.Moves, moves)
	}
}
