package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ChartRuleConfig is one entry of ferry.yaml's charts: the versions
// ferry bump may move the charts it matches to. The first entry whose
// url and chart both match a chart decides.
type ChartRuleConfig struct {
	// URL matches the chart's source URL (a HelmRepository's or
	// OCIRepository's spec.url, without a trailing slash), where *
	// matches any characters ("oci://ghcr.io/acme/*"); empty matches
	// any.
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// Chart matches the chart's name (an OCIRepository's is the last
	// element of its URL), * matching any characters; empty matches
	// any.
	Chart string `json:"chart,omitempty" yaml:"chart,omitempty"`
	// Range is the semver constraint a new version must meet
	// (">=1.0.0", "~1.2", "1.x"); empty is the current major version.
	Range string `json:"range,omitempty" yaml:"range,omitempty"`
	// Ignore lists versions or ranges never moved to.
	Ignore []string `json:"ignore,omitempty" yaml:"ignore,omitempty"`
	// Prerelease allows pre-release versions (1.2.0-rc.1) that meet the
	// range; without it they are taken only by a range that names one.
	Prerelease bool `json:"prerelease,omitempty" yaml:"prerelease,omitempty"`
}

// Matches reports whether the rule matches the chart named chart at the
// source url.
func (c ChartRuleConfig) Matches(url, chart string) bool {
	return glob(strings.TrimSuffix(c.URL, "/")).MatchString(strings.TrimSuffix(url, "/")) && glob(c.Chart).MatchString(chart)
}

// glob is the expression of a url or chart pattern: * matches any run
// of characters, slashes too; the empty pattern matches anything.
func glob(pattern string) *regexp.Regexp {
	if pattern == "" {
		return regexp.MustCompile(``)
	}
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
}

// check validates the range and the ignored versions.
func (c ChartRuleConfig) check() error {
	if c.Range != "" {
		if _, err := semver.NewConstraint(c.Range); err != nil {
			return fmt.Errorf("range %q: %w", c.Range, err)
		}
	}
	for _, v := range c.Ignore {
		if _, err := semver.NewConstraint(v); err != nil {
			return fmt.Errorf("ignore %q: %w", v, err)
		}
	}
	return nil
}
