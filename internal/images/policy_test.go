package images_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/images"
)

// The tag sets of the three styles ferry's users have, with what a
// registry also holds: signatures, floating tags, tags that are not
// versions at all.
var (
	// Semantic versions, as most projects tag (1.24.0).
	semverTags = []string{
		"1.22.0", "1.23.1", "v1.23.5", "1.24.0", "1.25.0-rc.1", "1.25.0-rc.2", "2.0.0-alpha.1",
		"latest", "1.24", "v1", "01.2.3", "1.2.3.4", "sha-3f2a1b9", "", "1.24.0.sig", "9.9.9.sig",
	}
	// Two components in one repository, told apart by prefix.
	monorepoTags = []string{
		"api-0.19.3", "api-0.20.0", "api-0.21.0", "api-0.22.0-rc.1", "api-latest",
		"sherpa-0.20.0", "sherpa-0.20.1", "sherpa-0.23.0-beta.1", "sherpa-0.20.1.sig",
		"api-0.99.0.sig", "0.30.0", "web-1.0.0",
	}
	// Numerical build numbers with leading zeros (03300208).
	numericalTags = []string{
		"03300206", "03300208", "3300207", "0330020", "latest", "03300209-debug", "main", "1e9x",
		"03300210.sig", "NaN", "Inf",
	}
)

func policy(mut func(*images.Policy)) *images.Policy {
	p := &images.Policy{Name: "app", Namespace: "flux-system", Image: "ghcr.io/org/app", Origin: "clusters/prod/app.yaml:3"}
	mut(p)
	return p
}

func semverPolicy(r string) *images.Policy {
	return policy(func(p *images.Policy) { p.SemVer = &images.SemVerPolicy{Range: r} })
}

func TestLatest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy *images.Policy
		tags   []string
		want   string // "" when no tag matches
	}{
		// semver
		{"semver: highest release, pre-releases and non-versions skipped", semverPolicy(">=1.0.0"), semverTags, "1.24.0"},
		{"semver: a range naming a pre-release admits pre-releases", semverPolicy("~1.25.0-0"), semverTags, "1.25.0-rc.2"},
		{"semver: pre-releases of the admitted minor only", semverPolicy(">=1.0.0-0 <2.0.0-0"), semverTags, "1.25.0-rc.2"},
		{"semver: pre-release of the next major when asked", semverPolicy(">=2.0.0-0"), semverTags, "2.0.0-alpha.1"},
		{"semver: tilde range, tag with a leading v", semverPolicy("~1.23"), semverTags, "v1.23.5"},
		{"semver: x range", semverPolicy("1.22.x"), semverTags, "1.22.0"},
		{"semver: caret range", semverPolicy("^1.0.0"), semverTags, "1.24.0"},
		{"semver: OR of ranges", semverPolicy("1.22.x || 1.23.x"), semverTags, "v1.23.5"},
		{"semver: nothing in range", semverPolicy(">=3.0.0"), semverTags, ""},
		{"semver: a loose version (1.24) is not a version", semverPolicy("1.24"), []string{"1.24", "1.24.0.sig"}, ""},
		{"semver: equal versions (1.0.0, v1.0.0) pick the same whatever the order", semverPolicy("*"), []string{"v1.0.0", "1.0.0"}, "v1.0.0"},
		{"semver: equal versions, other order", semverPolicy("*"), []string{"1.0.0", "v1.0.0"}, "v1.0.0"},
		{"semver: build metadata does not order, ties broken by name", semverPolicy("*"), []string{"1.0.0+b", "1.0.0+a", "0.9.0"}, "1.0.0+b"},
		{"semver: no tags at all", semverPolicy("*"), nil, ""},

		// two policies on one repository
		{"api: extract the version after the prefix", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<version>\d+\.\d+\.\d+)$`, Extract: "$version"}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.0.0"}
		}), monorepoTags, "api-0.21.0"},
		{"sherpa: same repository, other prefix", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^sherpa-(?P<version>.*)$`, Extract: "$version"}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.0.0"}
		}), monorepoTags, "sherpa-0.20.1"},
		{"sherpa: with pre-releases", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^sherpa-(?P<version>.*)$`, Extract: "${version}"}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.0.0-0"}
		}), monorepoTags, "sherpa-0.23.0-beta.1"},
		{"api: extract by group number", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(\d+\.\d+\.\d+)$`, Extract: "$1"}
			p.SemVer = &images.SemVerPolicy{Range: "<0.21.0"}
		}), monorepoTags, "api-0.20.0"},
		{"api: without extract the prefixed tags are not versions", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-`}
			p.SemVer = &images.SemVerPolicy{Range: ">=0.0.0"}
		}), monorepoTags, ""},
		{"api: the signature of a newer version is excluded", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<v>[0-9.]+)(\.sig)?$`, Extract: "$v"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), monorepoTags, "api-0.21.0"},

		// numerical
		{"numerical asc: highest number, leading zeros kept", policy(func(p *images.Policy) {
			p.Numerical = &images.OrderPolicy{Order: "asc"}
		}), numericalTags, "03300208"},
		{"numerical: order defaults to asc", policy(func(p *images.Policy) {
			p.Numerical = &images.OrderPolicy{}
		}), numericalTags, "03300208"},
		{"numerical desc: lowest number", policy(func(p *images.Policy) {
			p.Numerical = &images.OrderPolicy{Order: "DESC"}
		}), numericalTags, "0330020"},
		{"numerical with a filter and extract", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^main-[0-9a-f]+-(?P<ts>\d+)$`, Extract: "$ts"}
			p.Numerical = &images.OrderPolicy{Order: "asc"}
		}), []string{"main-abc1234-1700000100", "main-def5678-1700000099", "main-0a0a0a0-999", "pr-1-1800000000"}, "main-abc1234-1700000100"},
		{"numerical: equal numbers pick the same whatever the order", policy(func(p *images.Policy) {
			p.Numerical = &images.OrderPolicy{}
		}), []string{"007", "7", "07"}, "7"},
		{"numerical: no number", policy(func(p *images.Policy) {
			p.Numerical = &images.OrderPolicy{}
		}), []string{"latest", "main", "NaN"}, ""},

		// alphabetical
		{"alphabetical asc: last in order", policy(func(p *images.Policy) {
			p.Alphabetical = &images.OrderPolicy{}
		}), []string{"RELEASE.2024-01-02", "RELEASE.2024-03-01", "RELEASE.2023-12-31"}, "RELEASE.2024-03-01"},
		{"alphabetical desc: first in order", policy(func(p *images.Policy) {
			p.Alphabetical = &images.OrderPolicy{Order: "desc"}
		}), []string{"b", "a", "c"}, "a"},
		{"alphabetical: signatures excluded by default", policy(func(p *images.Policy) {
			p.Alphabetical = &images.OrderPolicy{}
		}), []string{"a", "b", "zzz.sig"}, "b"},
		{"alphabetical with extract: ordered by the extracted timestamp", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^(?P<branch>main|dev)-(?P<ts>[0-9T]+)$`, Extract: "$ts-$branch"}
			p.Alphabetical = &images.OrderPolicy{}
		}), []string{"dev-20240301T1200", "main-20240302T0900", "main-20240101T0000", "zeta"}, "main-20240302T0900"},

		// exclusion lists
		{"exclusion list replaces the default one", policy(func(p *images.Policy) {
			p.ExclusionList = []string{`^latest$`}
			p.Alphabetical = &images.OrderPolicy{}
		}), []string{"a", "latest", "zzz.sig"}, "zzz.sig"},
		{"exclusion list drops release candidates", policy(func(p *images.Policy) {
			p.ExclusionList = []string{`-rc\.`, `^2\.`}
			p.SemVer = &images.SemVerPolicy{Range: ">=1.0.0-0"}
		}), semverTags, "1.24.0"},
		{"exclusion list applies before extract", policy(func(p *images.Policy) {
			p.ExclusionList = []string{`^api-0\.21`}
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<v>.*)$`, Extract: "$v"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), monorepoTags, "api-0.20.0"},
		{"everything excluded", policy(func(p *images.Policy) {
			p.ExclusionList = []string{`.`}
			p.Alphabetical = &images.OrderPolicy{}
		}), semverTags, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := images.Latest(tc.tags, tc.policy)
			if tc.want == "" {
				if !errors.Is(err, images.ErrNoMatch) {
					t.Fatalf("Latest = %q, %v; want an error wrapping ErrNoMatch", got, err)
				}
				if !strings.Contains(err.Error(), "ImagePolicy/flux-system/app") {
					t.Errorf("error %q does not name the policy", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Latest: %v", err)
			}
			if got != tc.want {
				t.Errorf("Latest = %q, want %q", got, tc.want)
			}
			// The registry's order does not matter.
			rev := make([]string, len(tc.tags))
			for i, tag := range tc.tags {
				rev[len(tc.tags)-1-i] = tag
			}
			if again, _ := images.Latest(rev, tc.policy); again != got {
				t.Errorf("Latest of the tags in reverse order = %q, want %q", again, got)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy *images.Policy
		want   []string
	}{
		{"invalid filter regex", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<v>[0-9.+$`}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"filterTags.pattern", "invalid regular expression", "missing closing ]"}},
		{"invalid exclusion regex", policy(func(p *images.Policy) {
			p.ExclusionList = []string{`^ok$`, `*.sig`}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"exclusionList", `"*.sig"`, "missing argument to repetition operator"}},
		{"extract naming a missing group", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(?P<version>.*)$`, Extract: "$ver"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"filterTags.extract", `no group named "ver"`, "version"}},
		{"extract naming a group when there are none", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-.*$`, Extract: "${version}"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"filterTags.extract", `no group named "version"`, "no named groups"}},
		{"extract naming a group number out of range", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(.*)$`, Extract: "$2"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"filterTags.extract", "group 2 does not exist"}},
		{"extract where the name runs on ($1x is group 1x)", policy(func(p *images.Policy) {
			p.FilterTags = &images.TagFilter{Pattern: `^api-(.*)$`, Extract: "$1x"}
			p.SemVer = &images.SemVerPolicy{Range: "*"}
		}), []string{"filterTags.extract", `no group named "1x"`}},
		{"invalid semver range", semverPolicy(">=1.0.0 <<2"), []string{"policy.semver.range", `">=1.0.0 <<2"`}},
		{"empty semver range", semverPolicy(""), []string{"policy.semver.range"}},
		{"invalid order", policy(func(p *images.Policy) { p.Numerical = &images.OrderPolicy{Order: "newest"} }), []string{"policy.numerical.order", `"newest"`}},
		{"no policy kind", policy(func(p *images.Policy) {}), []string{"want one of semver, numerical or alphabetical"}},
		{"two policy kinds", policy(func(p *images.Policy) {
			p.SemVer = &images.SemVerPolicy{Range: "*"}
			p.Alphabetical = &images.OrderPolicy{}
		}), []string{"not semver and alphabetical"}},
		{"no image", policy(func(p *images.Policy) { p.Image = ""; p.SemVer = &images.SemVerPolicy{Range: "*"} }), []string{"no image"}},
		{"unknown digest reflection policy", policy(func(p *images.Policy) {
			p.SemVer = &images.SemVerPolicy{Range: "*"}
			p.DigestReflectionPolicy = "Sometimes"
		}), []string{"digestReflectionPolicy", "Sometimes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := tc.policy.Compile()
			if err == nil {
				t.Fatalf("Compile = %v, nil; want an error", s)
			}
			want := append([]string{"ImagePolicy/flux-system/app (clusters/prod/app.yaml:3): "}, tc.want...)
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPolicers(t *testing.T) {
	t.Parallel()
	// Each policy kind on its own, without filters: what Flux's policers
	// select, with invalid entries skipped.
	sv, err := images.NewSemVer(">=1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	num, err := images.NewNumerical("")
	if err != nil {
		t.Fatal(err)
	}
	alpha, err := images.NewAlphabetical("DESC")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		policer images.Policer
		tags    []string
		want    string
	}{
		{"semver", sv, []string{"1.0.0", "1.10.0", "1.9.0", "x"}, "1.10.0"},
		{"numerical compares numbers, not strings", num, []string{"9", "10", "010.5", "x"}, "010.5"},
		{"alphabetical desc", alpha, []string{"b", "B", "a"}, "B"},
	}
	for _, tc := range tests {
		got, err := tc.policer.Latest(tc.tags)
		if err != nil || got != tc.want {
			t.Errorf("%s: Latest = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := images.NewNumerical("sideways"); err == nil {
		t.Error("NewNumerical(sideways) = nil error")
	}
}
