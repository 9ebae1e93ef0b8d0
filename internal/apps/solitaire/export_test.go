package solitaire

import (
	"errors"
	"strings"
)

// Layout is a game state that tests set with SetLayout. Cards are in their short form ("QH",
// "10S"); the stock, the waste and each foundation list their top card last, each tableau
// pile its bottom card first.
type Layout struct {
	Tableau     [7]PileLayout
	Stock       []string
	Waste       []string
	Foundations [4][]string
	Moves       int
	Seed        int64
}

// PileLayout is a tableau pile: its face-down cards, then its face-up ones.
type PileLayout struct{ Down, Up []string }

// SetLayout replaces the game with l, dealt now. It refuses a layout that does not hold each
// of the 52 cards exactly once, or has a pile of face-down cards only. Undo records made
// before it can no longer be used.
func (a *App) SetLayout(l Layout) error {
	g := &game{seed: l.Seed, dealt: a.now(), moves: l.Moves}
	seen := map[card]bool{}
	read := func(ss []string) ([]card, error) {
		var cs []card
		for _, s := range ss {
			c, ok := parseCard(s)
			if !ok {
				return nil, errors.New("not a card: " + s)
			}
			if seen[c] {
				return nil, errors.New("card twice: " + s)
			}
			seen[c] = true
			cs = append(cs, c)
		}
		return cs, nil
	}
	var err error
	for i, p := range l.Tableau {
		down, err1 := read(p.Down)
		up, err2 := read(p.Up)
		if err = errors.Join(err1, err2); err != nil {
			return err
		}
		if len(down) > 0 && len(up) == 0 {
			return errors.New("a pile of face-down cards only")
		}
		g.tableau[i] = pile{cards: append(down, up...), down: len(down)}
	}
	if g.stock, err = read(l.Stock); err != nil {
		return err
	}
	if g.waste, err = read(l.Waste); err != nil {
		return err
	}
	for i, f := range l.Foundations {
		if g.found[i], err = read(f); err != nil {
			return err
		}
	}
	if len(seen) != 52 {
		return errors.New("not all 52 cards")
	}
	if g.won() {
		g.wonAt = g.dealt
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastRev++
	g.rev = a.lastRev
	a.g = g
	return nil
}

// parseCard reads a card's short form, as card.String writes it, and nothing else.
func parseCard(s string) (card, bool) {
	if len(s) < 2 || len(s) > 3 {
		return card{}, false
	}
	si := strings.IndexByte(suitCodes, s[len(s)-1])
	if si < 0 {
		return card{}, false
	}
	for r := ace; r <= king; r++ {
		if rankCodes[r] == s[:len(s)-1] {
			return card{rank: uint8(r), suit: suit(si)}, true
		}
	}
	return card{}, false
}
