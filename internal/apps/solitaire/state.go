package solitaire

import "time"

// pileView is a tableau pile as a player sees it.
type pileView struct {
	FaceDown int      `json:"face_down"`
	FaceUp   []string `json:"face_up"` // bottom first, the top card last
}

// stateView is what get_game_state, new_game and move answer: the token document's fields
// and the layout a player sees, never a face-down card.
type stateView struct {
	InProgress     bool       `json:"in_progress"`
	Moves          int        `json:"moves"`
	TimeElapsed    int64      `json:"time_elapsed"` // seconds from the deal to now, or to the win
	CardsRemaining int        `json:"cards_remaining"`
	Won            bool       `json:"won"`
	Seed           int64      `json:"seed"`
	Tableau        []pileView `json:"tableau"`
	WasteTop       *string    `json:"waste_top"`
	WasteCount     int        `json:"waste_count"`
	StockCount     int        `json:"stock_count"`
	Foundations    []*string  `json:"foundations"` // each foundation's top card, or null
}

func (g *game) view(now time.Time) stateView {
	won := g.won()
	end := now
	if won {
		end = g.wonAt
	}
	v := stateView{
		InProgress:     !won,
		Moves:          g.moves,
		TimeElapsed:    max(int64(end.Sub(g.dealt)/time.Second), 0),
		CardsRemaining: g.cardsRemaining(),
		Won:            won,
		Seed:           g.seed,
		Tableau:        make([]pileView, len(g.tableau)),
		WasteCount:     len(g.waste),
		StockCount:     len(g.stock),
		Foundations:    make([]*string, len(g.found)),
	}
	for i, p := range g.tableau {
		up := make([]string, 0, len(p.cards)-p.down)
		for _, c := range p.cards[p.down:] {
			up = append(up, c.String())
		}
		v.Tableau[i] = pileView{FaceDown: p.down, FaceUp: up}
	}
	if n := len(g.waste); n > 0 {
		s := g.waste[n-1].String()
		v.WasteTop = &s
	}
	for i, f := range g.found {
		if n := len(f); n > 0 {
			s := f[n-1].String()
			v.Foundations[i] = &s
		}
	}
	return v
}
