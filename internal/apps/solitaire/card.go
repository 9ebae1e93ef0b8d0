package solitaire

// suit is a card's suit, in the order of a new deck.
type suit uint8

const (
	clubs suit = iota
	diamonds
	hearts
	spades
)

// card is one of the 52 cards: rank 1 (Ace) to 13 (King) and a suit.
type card struct {
	rank uint8
	suit suit
}

const (
	ace  = 1
	king = 13
)

var (
	rankCodes = [...]string{"", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"}
	rankNames = [...]string{"", "Ace", "2", "3", "4", "5", "6", "7", "8", "9", "10", "Jack", "Queen", "King"}
	suitCodes = "CDHS"
)

// String returns the card's short form: rank A, 2-10, J, Q or K, then suit C, D, H or S, as
// "QH" or "10S".
func (c card) String() string { return rankCodes[c.rank] + string(suitCodes[c.suit]) }

func (c card) red() bool { return c.suit == diamonds || c.suit == hearts }

func (c card) colour() string {
	if c.red() {
		return "red"
	}
	return "black"
}
