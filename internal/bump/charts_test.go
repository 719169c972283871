package bump

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/helm"
)

func TestRewriteLine(t *testing.T) {
	for _, tc := range []struct {
		name, in, field, want, err string
	}{
		{name: "plain", in: "a: 1\n  version: 1.0.0\nb: 2\n", field: config.FieldReleaseVersion, want: "a: 1\n  version: 1.1.0\nb: 2\n"},
		{name: "double quoted, comment", in: "  version: \"1.0.0\" # keep\n", field: config.FieldChartVersion, want: "  version: \"1.1.0\" # keep\n"},
		{name: "single quoted, CRLF", in: "x: y\r\n  tag: '1.0.0'\r\n", field: config.FieldRefTag, want: "x: y\r\n  tag: '1.1.0'\r\n"},
		{name: "list item", in: "- version: 1.0.0\n", field: config.FieldReleaseVersion, want: "- version: 1.1.0\n"},
		{name: "no newline at the end", in: "a: b\nversion: 1.0.0", field: config.FieldReleaseVersion, want: "a: b\nversion: 1.1.0"},
		{name: "flow style", in: "chart: {version: 1.0.0}\n", field: config.FieldReleaseVersion, err: "no version: 1.0.0 to rewrite"},
		{name: "other value", in: "version: 1.0.1\n", field: config.FieldReleaseVersion, err: "no version: 1.0.0"},
		{name: "mismatched quotes", in: "version: \"1.0.0'\n", field: config.FieldReleaseVersion, err: "no version: 1.0.0"},
		{name: "another key", in: "appVersion: 1.0.0\n", field: config.FieldReleaseVersion, err: "no version: 1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := strings.Count(tc.in[:strings.Index(tc.in, "1.0.")], "\n") + 1
			got, err := rewriteLine([]byte(tc.in), line, tc.field, "1.0.0", "1.1.0")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadMarker(t *testing.T) {
	for _, tc := range []struct{ comment, want, err string }{
		{"# a comment", "", ""},
		{`# {"$chartpolicy": "~1.4"}`, "~1.4", ""},
		{`#{"$chartpolicy":">=1.0.0 <3.0.0"}`, ">=1.0.0 <3.0.0", ""},
		{`# {"$chartpolicy": "not a range"}`, "", `range "not a range"`},
		{`# $chartpolicy: ^1.0`, "", "want {"},
		{`# {"$chartpolicy": "^1", "other": "x"}`, "", "want {"},
	} {
		got, err := readMarker(tc.comment)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.comment, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.comment, got, err, tc.want)
		}
	}
}

// TestPickVersion: the range of a pinned version is the first matching
// ferry.yaml rule, else the line's marker, else its major version;
// pre-releases only when asked for; nothing older; a range floats.
func TestPickVersion(t *testing.T) {
	versions := []string{"0.9.0", "1.0.0", "1.1.0", "1.1.1", "1.2.0-rc.1", "1.3.0", "2.0.0", "2.1.0-beta.1"}
	src := helm.ChartSource{Kind: helm.OCIRepository, URL: "oci://registry.test/charts", Chart: "web"}
	for _, tc := range []struct {
		name, version, field, marker string
		rules                        []config.ChartRuleConfig
		want, float, err             string
	}{
		{name: "the current major", version: "1.0.0", want: "1.3.0"},
		{name: "already the newest", version: "1.3.0"},
		{name: "a pin the repository lacks", version: "1.4.0", err: `range ">=1.4.0 <2.0.0" matches none`},
		{name: "marker", version: "1.0.0", marker: "~1.1.0", want: "1.1.1"},
		{name: "rule before marker", version: "1.0.0", marker: "~1.1.0", rules: []config.ChartRuleConfig{{URL: "oci://registry.test/*", Range: ">=1.0.0"}}, want: "2.0.0"},
		{name: "rule of another chart", version: "1.0.0", rules: []config.ChartRuleConfig{{Chart: "api", Range: ">=1.0.0"}}, want: "1.3.0"},
		{name: "ignore", version: "1.0.0", rules: []config.ChartRuleConfig{{Chart: "w*", Range: "<2.0.0", Ignore: []string{"1.3.0", "1.1.x"}}}},
		{name: "ignore, then the next", version: "1.0.0", rules: []config.ChartRuleConfig{{Range: "<2.0.0", Ignore: []string{"1.3.0"}}}, want: "1.1.1"},
		{name: "prerelease", version: "1.1.1", rules: []config.ChartRuleConfig{{Range: ">=1.0.0 <1.3.0", Prerelease: true}}, want: "1.2.0-rc.1"},
		{name: "prerelease pin takes prereleases", version: "2.1.0-alpha.1", want: "2.1.0-beta.1"},
		{name: "nothing matches", version: "1.0.0", marker: "^5.0.0", err: `range "^5.0.0" matches none of the versions of chart web (it has 2.1.0-beta.1, 2.0.0, 1.3.0, 1.2.0-rc.1, 1.1.1 and 3 older)`},
		{name: "a range floats", version: "1.x", float: `range "1.x" floats; it matches 1.3.0 now`},
		{name: "ref.semver floats", version: ">=1.0.0", field: config.FieldRefSemver, float: "matches 2.0.0 now"},
		{name: "not a version", version: "latest", err: `"latest" is not a semantic version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field := tc.field
			if field == "" {
				field = config.FieldReleaseVersion
			}
			lp := &located{
				pin:  config.ChartPin{Kind: "HelmRelease", Namespace: "apps", Name: "web", Field: field, Version: tc.version, Source: src},
				line: pinLine{file: "apps/web.yaml", line: 9, marker: tc.marker},
			}
			m, float, warns, err := pickVersion(lp, listing{versions: versions}, tc.rules)
			if len(warns) > 0 {
				t.Errorf("warnings %q", warns)
			}
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.float != "":
				if !strings.Contains(float, tc.float) || m != nil {
					t.Errorf("float %q, move %+v; want %q", float, m, tc.float)
				}
			case tc.want == "":
				if m != nil {
					t.Errorf("moved to %s", m.New)
				}
			default:
				if m == nil || m.New != tc.want || m.Old != tc.version || m.Where() != "apps/web.yaml:9" {
					t.Errorf("move %+v, want %s", m, tc.want)
				}
			}
		})
	}
	// A listing that failed, and one with versions that are no versions.
	lp := &located{pin: config.ChartPin{Kind: "HelmChart", Namespace: "apps", Name: "web", Field: config.FieldChartVersion, Version: "1.0.0", Source: src}, line: pinLine{file: "a.yaml", line: 3}}
	if _, _, _, err := pickVersion(lp, listing{err: errors.New("refused")}, nil); err == nil || err.Error() != "refused" {
		t.Errorf("failed listing: %v", err)
	}
	m, _, warns, err := pickVersion(lp, listing{versions: []string{"1.0.0", "1.1.0", "one.two"}}, nil)
	if err != nil || m == nil || m.New != "1.1.0" || len(warns) != 1 || !strings.Contains(warns[0], `HelmChart/apps/web (a.yaml:3): the versions of chart web at oci://registry.test/charts include "one.two"`) {
		t.Errorf("move %+v, warnings %q, err %v", m, warns, err)
	}
}

func TestBranchPart(t *testing.T) {
	for in, want := range map[string]string{
		"oci://127.0.0.1:5000/charts":     "127.0.0.1-5000-charts",
		"oci://127.0.0.1:5000/charts/web": "127.0.0.1-5000-charts-web",
		"https://charts.example.com/":     "charts.example.com",
		"https://x.test/a..b/@{c}~^":      "x.test-a-b---c---",
	} {
		if got := branchPart(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// TestChartEvents: a chart pull request sends one event per object
// whose version it moves, that object involved.
func TestChartEvents(t *testing.T) {
	p := Opened{Action: "created", URL: "https://forge.test/pr/1", Changes: []Change{
		{Object: "HelmRelease/apps/web", Objects: []string{"HelmRelease/apps/web", "HelmRelease/apps/web2"}, Old: "1.0.0", New: "1.1.0", Chart: "web"},
		{Object: "OCIRepository/apps/web-chart", Old: "1.0.0", New: "1.1.0", Chart: "web"},
	}}
	var got []string
	for _, e := range p.Events() {
		got = append(got, e.Reason+" "+e.InvolvedObject.APIVersion+" "+e.InvolvedObject.Kind+" "+e.Message)
	}
	want := []string{
		"PullRequestOpened helm.toolkit.fluxcd.io/v2 HelmRelease apps/web 1.0.0 -> 1.1.0, https://forge.test/pr/1",
		"PullRequestOpened helm.toolkit.fluxcd.io/v2 HelmRelease apps/web2 1.0.0 -> 1.1.0, https://forge.test/pr/1",
		"PullRequestOpened source.toolkit.fluxcd.io/v1 OCIRepository apps/web-chart 1.0.0 -> 1.1.0, https://forge.test/pr/1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	p.Action = "unchanged"
	if ev := p.Events(); len(ev) != 0 {
		t.Errorf("unchanged: %d events", len(ev))
	}
}
