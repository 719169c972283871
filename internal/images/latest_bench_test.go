package images

import (
	"fmt"
	"testing"
)

// BenchmarkLatest selects from 300 tags of each of the three tag styles
// of DESIGN (the shape of bench/scan's repositories).
func BenchmarkLatest(b *testing.B) {
	var semverTags, prefixed, numbers []string
	for m := range 30 {
		for p := range 10 {
			semverTags = append(semverTags, fmt.Sprintf("1.%d.%d", m, p))
		}
	}
	for _, c := range []string{"api", "sherpa"} {
		for m := range 15 {
			for p := range 10 {
				prefixed = append(prefixed, fmt.Sprintf("%s-0.%d.%d", c, m, p))
			}
		}
	}
	for n := range 300 {
		numbers = append(numbers, fmt.Sprintf("0330%04d", n))
	}
	for _, tc := range []struct {
		name string
		tags []string
		p    Policy
	}{
		{"semver", semverTags, Policy{Image: "x", SemVer: &SemVerPolicy{Range: ">=1.0.0"}}},
		{"extract", prefixed, Policy{Image: "x", FilterTags: &TagFilter{Pattern: `^api-(?P<version>.*)$`, Extract: "$version"}, SemVer: &SemVerPolicy{Range: ">=0.1.0"}}},
		{"numerical", numbers, Policy{Image: "x", FilterTags: &TagFilter{Pattern: `^\d{8}$`}, Numerical: &OrderPolicy{Order: "asc"}}},
	} {
		s, err := tc.p.Compile()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Latest(tc.tags); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
