package keys

import (
	"strings"
	"testing"
)

func TestValidAppID(t *testing.T) {
	long := func(n int) string { // a valid-looking id of exactly n bytes
		s := "org." + strings.Repeat("a", n-4)
		if len(s) != n {
			panic("bad fixture")
		}
		return s
	}
	tests := []struct {
		id   string
		want bool
	}{
		{"org.example.notes", true},
		{"org.xfce.mousepad", true},
		{"a.b", true},
		{"com.example.my-app", true},
		{"io.k8s.app2", true},
		{"x1.y2.z3", true},
		{long(253), true},

		{"", false},
		{"a", false},
		{"notes", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a..b", false},
		{".a.b", false},
		{"a.b.", false},
		{"A.b", false},
		{"org.Example.notes", false},
		{"a/b.c", false},
		{"a\\b.c", false},
		{"org.example/../../etc", false},
		{"1org.example", false},
		{"org.-example", false},
		{"org.example-", false},
		{"org.exa_mple", false},
		{"org.example notes", false},
		{"org.example.notes\x00", false},
		{"org.exämple", false},
		{long(254), false},
	}
	for _, tt := range tests {
		name := tt.id
		if len(name) > 40 {
			name = name[:20] + "..."
		}
		t.Run(name, func(t *testing.T) {
			if got := ValidAppID(tt.id); got != tt.want {
				t.Errorf("ValidAppID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}
