package main

import (
	"testing"

	"github.com/capgate/capgate/internal/consent"
)

func TestReversibilityWords(t *testing.T) {
	for _, tc := range []struct {
		r    consent.Request
		want string
	}{
		{consent.Request{Reversibility: consent.Reversible}, "can be undone"},
		{consent.Request{Reversibility: consent.Compensable, Remedy: "files.org.example.files.restore"}, "remedy: files.org.example.files.restore"},
		{consent.Request{Reversibility: consent.Compensable}, "cannot be undone"},
		{consent.Request{Reversibility: consent.Irreversible}, "cannot be undone"},
		{consent.Request{}, "cannot be undone"},
	} {
		if got := reversibilityWords(tc.r); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
