package operator

// The audit actions of the person's preference between the providers of one definition
// (plan.Planner keeps it). The approval page records them through Change with its own codes,
// since the refusals are the planner's, which this package does not import: it would bring the
// retrieval index into every front that makes a change.
const (
	ActionPreferenceSet   = "preference.set"
	ActionPreferenceClear = "preference.clear"
)
