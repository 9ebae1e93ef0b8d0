package manifest

import "testing"

// TestRanksFollowTheirLists: a side effect's and an auth level's rank is its place in
// SideEffects and AuthLevels, and a value in neither list (another spelling, a case, a
// space, the empty word) ranks above every listed one, so that it is never taken for a
// lesser effect or level.
func TestRanksFollowTheirLists(t *testing.T) {
	for i, s := range SideEffects {
		if s.Rank() != i {
			t.Errorf("%q ranks %d, its place in SideEffects is %d", s, s.Rank(), i)
		}
	}
	for i, a := range AuthLevels {
		if a.Rank() != i {
			t.Errorf("%q ranks %d, its place in AuthLevels is %d", a, a.Rank(), i)
		}
	}
	for _, s := range []SideEffect{"", "READ", "Read", " read", "read ", "destructive\x00", "reads", "systems"} {
		if s.Rank() != len(SideEffects) {
			t.Errorf("unknown side effect %q ranks %d, want %d", s, s.Rank(), len(SideEffects))
		}
	}
	for _, a := range []AuthLevel{"", "USER", "User", " user", "system\x00", "privileged ", "root"} {
		if a.Rank() != len(AuthLevels) {
			t.Errorf("unknown auth level %q ranks %d, want %d", a, a.Rank(), len(AuthLevels))
		}
	}
}
