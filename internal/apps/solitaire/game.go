package solitaire

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// pile is one of the seven tableau piles, bottom card first.
type pile struct {
	cards []card
	down  int // cards[:down] are face down; once a pile has cards, its top is face up
}

func (p *pile) top() (card, bool) {
	if len(p.cards) == 0 {
		return card{}, false
	}
	return p.cards[len(p.cards)-1], true
}

// game is one game of Klondike. Its methods are not safe for concurrent use: the App guards
// it. Stock and waste keep their top card last.
type game struct {
	seed    int64
	dealt   time.Time
	wonAt   time.Time // zero while the game is being played
	tableau [7]pile
	stock   []card
	waste   []card
	found   [4][]card
	moves   int
	rev     uint64 // the change that made this state, 0 for the first deal
}

// deal lays out a new game from seed. The deck starts in order (clubs, diamonds, hearts,
// spades, each Ace to King) and is shuffled by math/rand/v2's Shuffle over a PCG source seeded
// with (uint64(seed), 0); the shuffled deck is then dealt from its first card, row by row as a
// person deals: one card to each pile from pile 0 to 6, then one to each from pile 1, and so
// on, so pile i holds i+1 cards with only its top face up. The 24 cards left are the stock,
// its top the deck's last card.
func deal(seed int64, now time.Time) *game {
	deck := make([]card, 0, 52)
	for s := clubs; s <= spades; s++ {
		for r := ace; r <= king; r++ {
			deck = append(deck, card{rank: uint8(r), suit: s})
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
	g := &game{seed: seed, dealt: now}
	n := 0
	for row := range 7 {
		for p := row; p < 7; p++ {
			g.tableau[p].cards = append(g.tableau[p].cards, deck[n])
			n++
		}
	}
	for p := range g.tableau {
		g.tableau[p].down = p
	}
	g.stock = slices.Clone(deck[n:])
	return g
}

// clone returns a deep copy of g.
func (g *game) clone() *game {
	c := *g
	for i := range c.tableau {
		c.tableau[i].cards = slices.Clone(g.tableau[i].cards)
	}
	c.stock = slices.Clone(g.stock)
	c.waste = slices.Clone(g.waste)
	for i := range c.found {
		c.found[i] = slices.Clone(g.found[i])
	}
	return &c
}

func (g *game) won() bool {
	for _, f := range g.found {
		if len(f) != king {
			return false
		}
	}
	return true
}

func (g *game) cardsRemaining() int {
	n := 52
	for _, f := range g.found {
		n -= len(f)
	}
	return n
}

// place is where a move takes cards from or puts them.
type place uint8

const (
	atStock place = iota + 1
	atWaste
	atTableau
	atFoundation
)

// places are the words of move's from and to.
var places = map[string]place{"stock": atStock, "waste": atWaste, "tableau": atTableau, "foundation": atFoundation}

// move is one well-formed move: its places go together, its indexes are in range, and count
// is above 1 only from a tableau pile to another. toIndex is -1 for a move to a foundation
// that lets the game pick it.
type move struct {
	from, to           place
	fromIndex, toIndex int
	count              int
}

// ruleError is a move the rules of Klondike forbid. Its text is the rule.
type ruleError string

func (e ruleError) Error() string { return string(e) }

// apply makes m if the rules allow it, turns up the new top card of the pile it took from,
// and counts it. On a ruleError g is unchanged.
func (g *game) apply(m move, now time.Time) error {
	if g.won() {
		return ruleError("the game is won; deal a new one with new_game")
	}
	switch m.from {
	case atStock:
		if len(g.stock) == 0 {
			if len(g.waste) == 0 {
				return ruleError("the stock and the waste are both empty")
			}
			// Turn the waste over: the first card drawn is the stock's top again.
			g.stock = g.waste
			slices.Reverse(g.stock)
			g.waste = nil
		} else {
			g.waste = append(g.waste, g.stock[len(g.stock)-1])
			g.stock = g.stock[:len(g.stock)-1]
		}
	case atWaste:
		if len(g.waste) == 0 {
			return ruleError("the waste is empty")
		}
		c := g.waste[len(g.waste)-1]
		if err := g.put([]card{c}, m); err != nil {
			return err
		}
		g.waste = g.waste[:len(g.waste)-1]
	case atTableau:
		src := &g.tableau[m.fromIndex]
		if len(src.cards) == 0 {
			return ruleError(fmt.Sprintf("tableau pile %d is empty", m.fromIndex))
		}
		if up := len(src.cards) - src.down; m.count > up {
			return ruleError(fmt.Sprintf("tableau pile %d has only %d face-up %s", m.fromIndex, up, plural(up, "card")))
		}
		run := src.cards[len(src.cards)-m.count:]
		for i := 1; i < len(run); i++ {
			if !stacks(run[i], run[i-1]) {
				return ruleError("the cards moved together must descend in alternating colours")
			}
		}
		if err := g.put(run, m); err != nil {
			return err
		}
		src.cards = src.cards[:len(src.cards)-m.count]
		if src.down > 0 && src.down == len(src.cards) {
			src.down-- // turn up the new top card
		}
	case atFoundation:
		f := g.found[m.fromIndex]
		if len(f) == 0 {
			return ruleError(fmt.Sprintf("foundation %d is empty", m.fromIndex))
		}
		if err := g.put(f[len(f)-1:], m); err != nil {
			return err
		}
		g.found[m.fromIndex] = f[:len(f)-1]
	default:
		return ruleError("no such place to move from")
	}
	g.moves++
	if g.won() {
		g.wonAt = now
	}
	return nil
}

// put adds run to m's destination if the rules allow it. It copies the cards, so run may
// alias the source.
func (g *game) put(run []card, m move) error {
	switch m.to {
	case atTableau:
		dst := &g.tableau[m.toIndex]
		if rule := stackRule(run[0], dst); rule != "" {
			return ruleError(rule)
		}
		dst.cards = append(dst.cards, run...)
		return nil
	case atFoundation:
		if len(run) != 1 {
			return ruleError("a foundation takes one card at a time")
		}
		c := run[0]
		i := m.toIndex
		if i < 0 {
			i = g.foundationFor(c)
		}
		if rule := foundationRule(c, g.found[i]); rule != "" {
			return ruleError(rule)
		}
		g.found[i] = append(g.found[i], c)
		return nil
	}
	return ruleError("cards go only to a tableau pile or a foundation")
}

// foundationFor is the foundation a card goes to when the move does not say: the one of its
// suit once started, else the first empty one.
func (g *game) foundationFor(c card) int {
	empty := -1
	for i, f := range g.found {
		if len(f) > 0 && f[0].suit == c.suit {
			return i
		}
		if len(f) == 0 && empty < 0 {
			empty = i
		}
	}
	if empty < 0 {
		return 0 // every foundation holds another suit: impossible with one deck
	}
	return empty
}

// stacks says whether c may lie on under in the tableau: one rank lower, the other colour.
func stacks(c, under card) bool { return under.rank == c.rank+1 && under.red() != c.red() }

// stackRule is the rule c breaks by going on dst, or "".
func stackRule(c card, dst *pile) string {
	under, ok := dst.top()
	switch {
	case !ok && c.rank != king:
		return "only a King goes on an empty tableau pile"
	case !ok:
		return ""
	case c.rank == king:
		return "a King goes only on an empty tableau pile"
	case !stacks(c, under):
		other := "red"
		if c.red() {
			other = "black"
		}
		return fmt.Sprintf("a %s %s goes only on a %s %s", c.colour(), rankNames[c.rank], other, rankNames[c.rank+1])
	}
	return ""
}

// foundationRule is the rule c breaks by going on foundation f, or "".
func foundationRule(c card, f []card) string {
	if len(f) == 0 {
		if c.rank != ace {
			return "foundation needs an Ace first"
		}
		return ""
	}
	top := f[len(f)-1]
	switch {
	case top.rank == king:
		return "this foundation is complete"
	case c.suit != top.suit || c.rank != top.rank+1:
		return "this foundation takes only " + card{rank: top.rank + 1, suit: top.suit}.String() + " next"
	}
	return ""
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
