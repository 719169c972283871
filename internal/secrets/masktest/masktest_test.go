package masktest_test

import (
	"testing"

	"github.com/ferry-ci/ferry/internal/secrets/masktest"
)

func TestMasker(t *testing.T) {
	m := masktest.Masker(t, "correct-horse-battery-staple", "second-value")
	for msg, want := range map[string]string{
		"a correct-horse-battery-staple here": "a *** here",
		"and second-value":                    "and ***",
		"nothing secret":                      "nothing secret",
	} {
		if got := m.Mask(msg); got != want {
			t.Errorf("Mask(%q) = %q, want %q", msg, got, want)
		}
	}
}
