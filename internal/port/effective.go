package port

// Limits is what bounds a capability's requested timeout and resource budget besides its own
// declaration: the host's policy ceiling and the grant's budget. In every field 0 (or a missing
// key) means no limit, as a capability's timeout_ms of 0 does. The zero Limits bounds nothing.
type Limits struct {
	TimeoutCeilingMS int64            // the host policy's ceiling on any call
	GrantTimeoutMS   int64            // the grant's budget for this capability
	BudgetCeiling    map[string]int64 // resource → the host policy's ceiling
	GrantBudget      map[string]int64 // resource → the grant's budget
}

// EffectiveTimeout is the timeout a call runs under: the least of the non-zero values among the
// declared timeout, the grant's and the ceiling, so that neither the plugin nor the grant can
// raise it above the policy ceiling. It is 0, no limit, only when all three are 0. Inputs are
// never negative in capgate (the manifest refuses a negative timeout_ms); a negative input,
// being non-zero, would win the minimum and mean no time at all.
func EffectiveTimeout(declaredMS int64, l Limits) int64 {
	return leastLimit(declaredMS, l.GrantTimeoutMS, l.TimeoutCeilingMS)
}

// EffectiveBudget applies EffectiveTimeout's rule to every resource named by the declaration,
// the grant or the ceiling: a resource limited by any of them is limited in the result. A
// resource the result maps to 0 is unlimited. It returns nil when no resource is named.
func EffectiveBudget(declared map[string]int64, l Limits) map[string]int64 {
	var out map[string]int64
	for _, m := range []map[string]int64{declared, l.GrantBudget, l.BudgetCeiling} {
		for k := range m {
			if _, done := out[k]; done {
				continue
			}
			if out == nil {
				out = map[string]int64{}
			}
			out[k] = leastLimit(declared[k], l.GrantBudget[k], l.BudgetCeiling[k])
		}
	}
	return out
}

// LimitRaised reports whether going from the effective limit prev to next gives more: a
// larger non-zero value, or 0 (no limit) after a non-zero one. It is how widening compares
// timeouts and budgets.
func LimitRaised(prev, next int64) bool {
	switch {
	case next == 0:
		return prev != 0
	case prev == 0:
		return false
	}
	return next > prev
}

// leastLimit returns the least non-zero value of vs, or 0 when all are 0.
func leastLimit(vs ...int64) int64 {
	var least int64
	for _, v := range vs {
		if v != 0 && (least == 0 || v < least) {
			least = v
		}
	}
	return least
}
