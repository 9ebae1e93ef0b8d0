package policy

import "testing"

// BenchmarkDecide decides a typical allowed call: a Tier 1 read of a user-level capability by a
// user client under a valid token that covers it. The goal is at most 2 µs.
func BenchmarkDecide(b *testing.B) {
	c := base()
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(&c); !d.Allowed() {
			b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
		}
	}
}
