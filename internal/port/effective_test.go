package port_test

import (
	"reflect"
	"testing"

	"github.com/capgate/capgate/internal/port"
)

func TestEffectiveTimeout(t *testing.T) {
	tests := []struct {
		name                     string
		declared, grant, ceiling int64
		want                     int64
	}{
		{"all zero means no limit", 0, 0, 0, 0},
		{"declared alone", 5000, 0, 0, 5000},
		{"grant alone limits an unlimited declaration", 0, 3000, 0, 3000},
		{"ceiling alone limits an unlimited declaration", 0, 0, 60000, 60000},
		{"grant below declared", 5000, 3000, 0, 3000},
		{"declared below grant", 2000, 3000, 0, 2000},
		{"ceiling below both", 5000, 3000, 1000, 1000},
		{"ceiling above both", 5000, 3000, 60000, 3000},
		{"grant of zero does not lift the ceiling", 90000, 0, 60000, 60000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := port.EffectiveTimeout(tt.declared, port.Limits{GrantTimeoutMS: tt.grant, TimeoutCeilingMS: tt.ceiling})
			if got != tt.want {
				t.Fatalf("EffectiveTimeout = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEffectiveBudget(t *testing.T) {
	l := port.Limits{
		GrantBudget:   map[string]int64{"cpu_ms": 500, "memory_mb": 0},
		BudgetCeiling: map[string]int64{"memory_mb": 256, "egress_kb": 1024},
	}
	got := port.EffectiveBudget(map[string]int64{"cpu_ms": 800, "memory_mb": 512, "calls": 0}, l)
	want := map[string]int64{"cpu_ms": 500, "memory_mb": 256, "egress_kb": 1024, "calls": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EffectiveBudget = %v, want %v", got, want)
	}
	if got := port.EffectiveBudget(nil, port.Limits{}); got != nil {
		t.Fatalf("EffectiveBudget of nothing = %v", got)
	}
}

// A change from non-zero to zero is a raise: zero is no limit at all.
func TestLimitRaised(t *testing.T) {
	tests := []struct {
		prev, next int64
		want       bool
	}{
		{5000, 0, true},
		{0, 5000, false},
		{0, 0, false},
		{5000, 6000, true},
		{5000, 4000, false},
		{5000, 5000, false},
	}
	for _, tt := range tests {
		if got := port.LimitRaised(tt.prev, tt.next); got != tt.want {
			t.Errorf("LimitRaised(%d, %d) = %v, want %v", tt.prev, tt.next, got, tt.want)
		}
	}
	// Compared as effective values: dropping a declared timeout under a ceiling is no raise,
	// dropping it with nothing above is.
	ceiling := port.Limits{TimeoutCeilingMS: 60000}
	if port.LimitRaised(port.EffectiveTimeout(60000, ceiling), port.EffectiveTimeout(0, ceiling)) {
		t.Error("0 under a 60 s ceiling raised a 60 s timeout")
	}
	if !port.LimitRaised(port.EffectiveTimeout(5000, port.Limits{}), port.EffectiveTimeout(0, port.Limits{})) {
		t.Error("5 s to no limit is not a raise")
	}
}
