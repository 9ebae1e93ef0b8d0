// Package calc is the Calculator app of the token document as a Tier 1 app: compute evaluates
// an arithmetic expression and get_value reads the last result, the calculator's display.
//
// Expressions are read by a recursive-descent parser of its own and computed exactly in
// rational arithmetic (math/big.Rat), so 0.1+0.2 is 0.3. Nothing in an expression is executed:
// there are no names, functions or variables, only numbers, + - * / % ^ and parentheses. Every
// input is bounded (its length, its nesting, the size of every intermediate number; see
// limits.go), so no expression can exhaust memory or time.
//
// It is not a scientific calculator (no functions, no irrational results, no fractional
// powers) and keeps no history beyond the last value, which lives in memory and is lost when
// the gateway restarts.
package calc
