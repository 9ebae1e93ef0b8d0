package solitaire

import (
	"strconv"
	"strings"
)

// solve looks for moves that win g, depth first, visiting at most budget states. It is a
// simple solver: foundation moves first, then tableau moves that turn up a card, empty a pile
// or free a card for a foundation, then the waste, then drawing. It returns nil when it finds
// no win within the budget.
func solve(g *game, budget int) []move {
	seen := map[string]bool{}
	var path []move
	var dfs func(g *game) bool
	dfs = func(g *game) bool {
		if g.won() {
			return true
		}
		k := stateKey(g)
		if seen[k] || len(seen) >= budget {
			return false
		}
		seen[k] = true
		for _, m := range candidates(g) {
			next := g.clone()
			if next.apply(m, g.dealt) != nil {
				continue
			}
			path = append(path, m)
			if dfs(next) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if dfs(g.clone()) {
		return path
	}
	return nil
}

func candidates(g *game) []move {
	var ms []move
	if len(g.waste) > 0 {
		ms = append(ms, move{from: atWaste, to: atFoundation, fromIndex: -1, toIndex: -1, count: 1})
	}
	for i := range g.tableau {
		if len(g.tableau[i].cards) > 0 {
			ms = append(ms, move{from: atTableau, fromIndex: i, to: atFoundation, toIndex: -1, count: 1})
		}
	}
	for i, src := range g.tableau {
		up := len(src.cards) - src.down
		for k := up; k >= 1; k-- {
			whole := k == up
			if whole && src.down == 0 && src.cards[0].rank == king {
				continue // a King already at the bottom of its pile gains nothing by moving
			}
			if !whole {
				exposed := src.cards[len(src.cards)-k-1]
				if foundationRule(exposed, g.found[g.foundationFor(exposed)]) != "" {
					continue
				}
			}
			for j := range g.tableau {
				if j != i && stackRule(src.cards[len(src.cards)-k], &g.tableau[j]) == "" {
					ms = append(ms, move{from: atTableau, fromIndex: i, to: atTableau, toIndex: j, count: k})
				}
			}
		}
	}
	if len(g.waste) > 0 {
		for j := range g.tableau {
			ms = append(ms, move{from: atWaste, fromIndex: -1, to: atTableau, toIndex: j, count: 1})
		}
	}
	if len(g.stock)+len(g.waste) > 0 {
		ms = append(ms, move{from: atStock, fromIndex: -1, to: atWaste, toIndex: -1, count: 1})
	}
	return ms
}

func stateKey(g *game) string {
	var b strings.Builder
	for _, p := range g.tableau {
		b.WriteString(strconv.Itoa(p.down))
		for _, c := range p.cards {
			b.WriteString(c.String())
		}
		b.WriteByte('|')
	}
	for _, c := range g.stock {
		b.WriteString(c.String())
	}
	b.WriteByte('|')
	for _, c := range g.waste {
		b.WriteString(c.String())
	}
	for _, f := range g.found {
		b.WriteByte('|')
		b.WriteString(strconv.Itoa(len(f)))
	}
	return b.String()
}
