package kube_test

import (
	"testing"

	"github.com/ferry-ci/ferry/internal/kube"
)

func TestSameMinor(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"v1.33.1", "1.33", true},
		{"v1.33.1+k3s1", "v1.33.4", true},
		{"v1.34.0-rc.1", "1.34", true},
		{"v1.33.1", "v1.34.1", false},
		{"v2.33.1", "v1.33.1", false},
		{"latest", "latest", true},
		{"latest", "v1.33.1", false},
	} {
		if got := kube.SameMinor(tc.a, tc.b); got != tc.want {
			t.Errorf("SameMinor(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
