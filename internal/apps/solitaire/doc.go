// Package solitaire is the Solitaire app of the token document as a Tier 1 app: a game of
// Klondike (draw one, unlimited passes through the stock) played on the app's own model of the
// cards. get_game_state reads the game, new_game deals a new one from a seed, and move makes
// one legal move; an illegal move changes nothing and says which rule it breaks. move and
// new_game can be undone within their window, most recent first.
//
// The deal is deterministic: the same seed always deals the same game (the ordered deck is
// shuffled by math/rand/v2 over PCG seeded with (seed, 0), then dealt row by row). The app
// starts with a game dealt from a random seed, which get_game_state reports so it can be dealt
// again. The game lives in memory and is lost when the gateway restarts.
//
// It is not a solver, keeps no scores or statistics, and draws nothing: a handler acts on the
// model, never on a rendered surface.
package solitaire
