package solitaire

// Limits of the app.
const (
	// MaxSeed is the largest seed new_game takes and the largest it picks: 2^53-1, the
	// largest integer every JSON client reads exactly, so a seed read from get_game_state can
	// always be sent back.
	MaxSeed = 1<<53 - 1

	// MaxUndoRecords bounds the undo records kept in memory, one per move or new game, about a
	// kilobyte each. The gateway's undo window ends most of them sooner; an older one is
	// forgotten and its undo refused.
	MaxUndoRecords = 256

	// UndoWindowMS is the undo window declared in the manifest for move and new_game.
	UndoWindowMS = 10 * 60 * 1000
)
