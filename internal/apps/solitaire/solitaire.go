package solitaire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.solitaire"
	Alias = "solitaire"
)

// The capability ids: the token document's methods, and move.
const (
	GetGameStateID = "solitaire.org.capgate.solitaire.get_game_state"
	NewGameID      = "solitaire.org.capgate.solitaire.new_game"
	MoveID         = "solitaire.org.capgate.solitaire.move"
)

// App is the Solitaire app: one game at a time. Its zero value is not usable: call New. It is
// safe for concurrent use; calls are served one at a time.
type App struct {
	doc      *manifest.Document
	now      func() time.Time
	instance string // names this App's undo records, so none outlives it

	mu      sync.Mutex
	g       *game
	lastRev uint64
	undo    map[uint64]undoRecord // by the rev of the state the change made
	order   []uint64              // undo's keys, oldest first
}

// undoRecord is what undoing one change needs: the game before it, and which capability made
// it.
type undoRecord struct {
	capability string
	before     *game
}

var (
	_ sdk.Handler = (*App)(nil)
	_ sdk.Undoer  = (*App)(nil)
)

// New returns the app with its manifest (as loaded and signed by the host) and the clock that
// times games (nil means time.Now). It starts with a game dealt from a random seed.
func New(doc *manifest.Document, now func() time.Time) *App {
	if now == nil {
		now = time.Now
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	a := &App{doc: doc, now: now, instance: hex.EncodeToString(id[:]), undo: map[uint64]undoRecord{}}
	a.g = deal(randomSeed(), now())
	return a
}

func randomSeed() int64 { return mrand.Int64N(MaxSeed + 1) }

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

type newGameParams struct {
	Seed *int64 `json:"seed"`
}

type moveParams struct {
	From      string `json:"from"`
	FromIndex *int   `json:"from_index"`
	To        string `json:"to"`
	ToIndex   *int   `json:"to_index"`
	Count     *int   `json:"count"`
}

func invalid(path, rule string) error {
	return sdk.InvalidParams(manifest.Problems{{Path: path, Rule: rule}})
}

// Invoke implements sdk.Handler.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	switch id {
	case GetGameStateID:
		a.mu.Lock()
		v := a.g.view(a.now())
		a.mu.Unlock()
		return answer(v, "")
	case NewGameID:
		var p newGameParams
		if err := json.Unmarshal(raw, &p); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "seed" {
				return sdk.Result{}, invalid("seed", "must be an integer from 0 to "+strconv.FormatInt(MaxSeed, 10))
			}
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object"}})
		}
		seed := randomSeed()
		if p.Seed != nil {
			if *p.Seed < 0 || *p.Seed > MaxSeed {
				return sdk.Result{}, invalid("seed", "must be an integer from 0 to "+strconv.FormatInt(MaxSeed, 10))
			}
			seed = *p.Seed
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		tok := a.change(NewGameID, deal(seed, a.now()))
		return answer(a.g.view(a.now()), tok)
	case MoveID:
		var p moveParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object of from, from_index, to, to_index and count"}})
		}
		m, err := parseMove(p)
		if err != nil {
			return sdk.Result{}, err
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		next := a.g.clone()
		if err := next.apply(m, a.now()); err != nil {
			var re ruleError
			if errors.As(err, &re) {
				return sdk.Result{}, sdk.ExecutionFailed(string(re), true)
			}
			return sdk.Result{}, sdk.ExecutionFailed("the move failed", false)
		}
		tok := a.change(MoveID, next)
		return answer(a.g.view(a.now()), tok)
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func answer(v stateView, undoToken string) (sdk.Result, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the game state could not be written", false)
	}
	return sdk.Result{Success: true, Data: data, UndoToken: undoToken}, nil
}

// change makes next the game, keeps what undoing it needs, and returns its undo token.
// a.mu must be held.
func (a *App) change(capability string, next *game) string {
	a.lastRev++
	next.rev = a.lastRev
	a.undo[next.rev] = undoRecord{capability: capability, before: a.g}
	a.order = append(a.order, next.rev)
	if len(a.order) > MaxUndoRecords {
		delete(a.undo, a.order[0])
		a.order = a.order[1:]
	}
	a.g = next
	return a.instance + "." + strconv.FormatUint(next.rev, 10)
}

// Undo implements sdk.Undoer: it puts back the game as it was before a move or a new game,
// provided nothing has changed it since: changes are undone most recent first.
func (a *App) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	if id != MoveID && id != NewGameID {
		return sdk.NotFound(id)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	instance, revText, ok := strings.Cut(undoToken, ".")
	rev, err := strconv.ParseUint(revText, 10, 64)
	if !ok || err != nil || instance != a.instance {
		return sdk.ExecutionFailed("the undo record is gone: the app has restarted since", false)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.undo[rev]
	if !ok || r.capability != id {
		return sdk.ExecutionFailed("the undo record is gone: it was undone already or is too old", false)
	}
	if a.g.rev != rev {
		return sdk.ExecutionFailed("the game has changed since; undo the later moves first", true)
	}
	delete(a.undo, rev)
	a.g = r.before
	return nil
}

// parseMove checks that p is a well-formed move: the places go together, the indexes name
// piles and foundations, the count fits. Whether the rules allow it is the game's to say.
func parseMove(p moveParams) (move, error) {
	from, ok := places[p.From]
	if !ok {
		return move{}, invalid("from", "must be stock, waste, tableau or foundation")
	}
	to, ok := places[p.To]
	if !ok || to == atStock {
		return move{}, invalid("to", "must be waste, tableau or foundation")
	}
	switch {
	case from == atStock && to != atWaste:
		return move{}, invalid("to", "cards from the stock go only to the waste")
	case from == atWaste && to == atWaste:
		return move{}, invalid("to", "cards from the waste go to a tableau pile or a foundation")
	case from == atTableau && to == atWaste:
		return move{}, invalid("to", "cards from a tableau pile go to another tableau pile or a foundation")
	case from == atFoundation && to != atTableau:
		return move{}, invalid("to", "cards from a foundation go only to a tableau pile")
	}
	m := move{from: from, to: to, fromIndex: -1, toIndex: -1, count: 1}
	var err error
	if m.fromIndex, err = index("from_index", p.FromIndex, from, false); err != nil {
		return move{}, err
	}
	if m.toIndex, err = index("to_index", p.ToIndex, to, to == atFoundation); err != nil {
		return move{}, err
	}
	if p.Count != nil {
		m.count = *p.Count
		if m.count < 1 || m.count > king {
			return move{}, invalid("count", "must be an integer from 1 to 13")
		}
		if m.count > 1 && (from != atTableau || to != atTableau) {
			return move{}, invalid("count", "more than one card moves only from a tableau pile to another")
		}
	}
	if from == atTableau && to == atTableau && m.fromIndex == m.toIndex {
		return move{}, invalid("to_index", "must differ from from_index")
	}
	return m, nil
}

// index reads a pile or foundation index: required for a tableau pile and a foundation
// (unless optional), refused for the stock and the waste. Absent, it is -1.
func index(path string, v *int, at place, optional bool) (int, error) {
	n := 0
	switch at {
	case atTableau:
		n = 7
	case atFoundation:
		n = 4
	}
	switch {
	case n == 0 && v != nil:
		return 0, invalid(path, "only for a tableau pile or a foundation")
	case n == 0 || (v == nil && optional):
		return -1, nil
	case v == nil:
		return 0, invalid(path, "required for a tableau pile or a foundation")
	case *v < 0 || *v >= n:
		what := "tableau pile"
		if at == atFoundation {
			what = "foundation"
		}
		return 0, invalid(path, fmt.Sprintf("must be a %s from 0 to %d", what, n-1))
	}
	return *v, nil
}

// Manifest is the app's manifest, unsigned; the host signs it with its local app key.
const Manifest = `{
  "app_id": "org.capgate.solitaire",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "capabilities": [
    {
      "id": "solitaire.org.capgate.solitaire.get_game_state",
      "name": "Read the game",
      "description": "Reads the game of Klondike solitaire: whether it is in progress or won, moves made, seconds since the deal, cards not yet on the foundations, the seed it was dealt from, and the layout a player sees (each tableau pile's face-down count and face-up cards, the waste's top card, the stock's count and each foundation's top card). Cards are written rank then suit, as QH or 10S.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "additionalProperties": false, "properties": {}},
      "returns": {"$ref": "#/definitions/state", "definitions": ` + stateSchema + `},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.solitaire.read",
      "risk": "low",
      "idempotency": "natural"
    },
    {
      "id": "solitaire.org.capgate.solitaire.new_game",
      "name": "Start a new game",
      "description": "Deals a new game of Klondike solitaire (draw one) from the seed given, or from a random one, replacing the game in progress, and answers with the new game's state. The same seed always deals the same game. Undoable for ten minutes.",
      "category": "ELEMENT_INTERACTION",
      "parameters": {"type": "object", "additionalProperties": false,
        "properties": {"seed": {"type": "integer", "minimum": 0, "maximum": 9007199254740991, "description": "The deal's seed; random when absent."}}},
      "returns": {"$ref": "#/definitions/state", "definitions": ` + stateSchema + `},
      "side_effects": "write",
      "auth_level": "user",
      "permission": "app.solitaire.play",
      "risk": "low",
      "undo_window_ms": 600000,
      "reversibility": "reversible",
      "idempotency": "none"
    },
    {
      "id": "solitaire.org.capgate.solitaire.move",
      "name": "Make a move",
      "description": "Makes one legal move and answers with the game's state: stock to waste draws a card (or turns the waste over when the stock is empty); waste to a tableau pile or a foundation; tableau to tableau moves the top count face-up cards; tableau to foundation; foundation to tableau. Piles are numbered 0 to 6, foundations 0 to 3 (to_index may be left out for a foundation). An illegal move changes nothing and names the rule it breaks. Undoable for ten minutes, most recent first.",
      "category": "ELEMENT_INTERACTION",
      "parameters": {"type": "object", "required": ["from", "to"], "additionalProperties": false,
        "properties": {
          "from": {"enum": ["stock", "waste", "tableau", "foundation"]},
          "from_index": {"type": "integer", "minimum": 0, "maximum": 6, "description": "The tableau pile (0-6) or foundation (0-3) to take from."},
          "to": {"enum": ["waste", "tableau", "foundation"]},
          "to_index": {"type": "integer", "minimum": 0, "maximum": 6, "description": "The tableau pile (0-6) or foundation (0-3) to put on."},
          "count": {"type": "integer", "minimum": 1, "maximum": 13, "default": 1, "description": "How many face-up cards to move from a tableau pile to another."}}},
      "returns": {"$ref": "#/definitions/state", "definitions": ` + stateSchema + `},
      "side_effects": "write",
      "auth_level": "user",
      "permission": "app.solitaire.play",
      "risk": "low",
      "undo_window_ms": 600000,
      "reversibility": "reversible",
      "idempotency": "none"
    }
  ]
}`

// stateSchema is the definitions of the state every capability answers with.
const stateSchema = `{
        "card": {"type": "string", "pattern": "^(A|[2-9]|10|J|Q|K)[CDHS]$"},
        "top": {"type": ["string", "null"], "pattern": "^(A|[2-9]|10|J|Q|K)[CDHS]$"},
        "state": {"type": "object", "additionalProperties": false,
          "required": ["in_progress", "moves", "time_elapsed", "cards_remaining", "won", "seed", "tableau", "waste_top", "waste_count", "stock_count", "foundations"],
          "properties": {
            "in_progress": {"type": "boolean"},
            "moves": {"type": "integer", "minimum": 0},
            "time_elapsed": {"type": "integer", "minimum": 0},
            "cards_remaining": {"type": "integer", "minimum": 0, "maximum": 52},
            "won": {"type": "boolean"},
            "seed": {"type": "integer", "minimum": 0, "maximum": 9007199254740991},
            "tableau": {"type": "array", "minItems": 7, "maxItems": 7, "items": {"type": "object", "additionalProperties": false,
              "required": ["face_down", "face_up"],
              "properties": {"face_down": {"type": "integer", "minimum": 0, "maximum": 6},
                "face_up": {"type": "array", "maxItems": 13, "items": {"$ref": "#/definitions/card"}}}}},
            "waste_top": {"$ref": "#/definitions/top"},
            "waste_count": {"type": "integer", "minimum": 0, "maximum": 24},
            "stock_count": {"type": "integer", "minimum": 0, "maximum": 24},
            "foundations": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"$ref": "#/definitions/top"}}}}}`
