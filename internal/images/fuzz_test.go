package images

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// FuzzParseMarkers checks that the marker parser never panics, that each
// marker it reports sits on its line and reads back as its value, and
// that rewriting every marker changes nothing but the marked values: the
// same lines, the same markers, each now holding the new value.
func FuzzParseMarkers(f *testing.F) {
	for _, seed := range []string{
		"image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n",
		"  - image: \"a:1\"   #{\"$imagepolicy\":\"ns:n:tag\"} trailing\r\n",
		"newTag: '1.0' # {\"$imagepolicy\": \"ns:n:tag\"}\nnewName: x # {\"$imagepolicy\": \"ns:n:name\"}",
		"- - x # {\"$imagepolicy\": \"a:b:digest\"}\n# image: y # {\"$imagepolicy\": \"a:b\"}\n",
		"\"k\\\"ey\": \"v\\\\a\\u0041\" # {\"$imagepolicy\": \"a:b\"}\n",
		"k: 'it''s' # {\"$imagepolicy\": \"a:b\"}\n",
		"image: # {\"$imagepolicy\": \"a:b\"}\n",
		"image: [a] # {\"$imagepolicy\": \"a:b\"}\n",
		"k: v\t#\t{\"$imagepolicy\": \"a:b\", \"x\": [1]}\n",
		"k: v # {\"$imagepolicy\": \"a:b:tag\"} # {\"$imagepolicy\": \"c:d\"}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMarkers("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		latest := map[string]*PolicyResult{}
		marked := map[int]bool{}
		for _, m := range ms {
			if m.off < 0 || m.end < m.off || m.end > len(data) {
				t.Fatalf("marker %+v outside the data", m)
			}
			if line := bytes.Count(data[:m.off], []byte("\n")) + 1; line != m.Line {
				t.Fatalf("marker %+v is on line %d", m, line)
			}
			v, err := unquote(string(data[m.off:m.end]), m.quote)
			if err != nil || v != m.Value {
				t.Fatalf("marker %+v: its text reads as %q, %v", m, v, err)
			}
			ns, name, _ := strings.Cut(m.Policy, ":")
			latest[m.Policy] = &PolicyResult{
				Policy: &Policy{Namespace: ns, Name: name, Image: "reg.example/x"},
				Tag:    "9.9.9-fuzz",
				Digest: "sha256:abcd",
			}
			marked[m.Line] = true
		}
		out, _, err := rewrite(data, ms, latest)
		if err != nil {
			t.Fatalf("rewrite: %v", err)
		}
		before, after := bytes.Split(data, []byte("\n")), bytes.Split(out, []byte("\n"))
		if len(before) != len(after) {
			t.Fatalf("rewrite changed the number of lines from %d to %d", len(before), len(after))
		}
		for i := range before {
			if !marked[i+1] && !bytes.Equal(before[i], after[i]) {
				t.Fatalf("rewrite changed unmarked line %d: %q -> %q", i+1, before[i], after[i])
			}
		}
		again, err := ParseMarkers("f.yaml", out)
		if err != nil {
			t.Fatalf("the rewritten file no longer parses: %v\n%q", err, out)
		}
		if len(again) != len(ms) {
			t.Fatalf("the rewritten file has %d markers, want %d", len(again), len(ms))
		}
		for i, m := range again {
			r := latest[m.Policy]
			if m.Policy != ms[i].Policy || m.Field != ms[i].Field || m.Line != ms[i].Line || r == nil {
				t.Fatalf("marker %d changed: %+v -> %+v", i, ms[i], m)
			}
			if want := Value(r.Policy, m.Field, r.Tag, r.Digest); m.Value != want {
				t.Fatalf("marker %+v holds %q after the rewrite, want %q", m, m.Value, want)
			}
		}
	})
}

// FuzzTagFilter checks that compiling any filter either fails naming the
// policy or selects only tags that were given, are not excluded, and
// match the pattern.
func FuzzTagFilter(f *testing.F) {
	f.Add(`^api-(?P<version>.*)$`, "$version", "api-1.0.0\napi-1.2.0\nsherpa-2.0.0\napi-3.0.0.sig", ">=1.0.0")
	f.Add(`^(?P<ts>\d+)$`, "${ts}", "1\n2\n03\nx", "")
	f.Add(`(`, "", "a", "*")
	f.Add(`^a(.*)`, "$1$2", "ab", "*")
	f.Add(`^a(.*)`, "$$x", "ab\n", "<1")
	f.Add(`.*`, "$", "\n\n", "")
	f.Fuzz(func(t *testing.T, pattern, extract, tagList, semverRange string) {
		tags := strings.Split(tagList, "\n")
		for kind := range 3 {
			p := &Policy{Name: "p", Namespace: "ns", Image: "reg.example/x", FilterTags: &TagFilter{Pattern: pattern, Extract: extract}}
			switch kind {
			case 0:
				p.SemVer = &SemVerPolicy{Range: semverRange}
			case 1:
				p.Numerical = &OrderPolicy{}
			case 2:
				p.Alphabetical = &OrderPolicy{Order: "desc"}
			}
			s, err := p.Compile()
			if err != nil {
				if !strings.HasPrefix(err.Error(), "ImagePolicy/ns/p: ") {
					t.Fatalf("error %q does not name the policy", err)
				}
				continue
			}
			re := regexp.MustCompile(pattern)
			for value, tag := range s.Filter(tags) {
				if !slices.Contains(tags, tag) {
					t.Fatalf("Filter returned %q, not a given tag", tag)
				}
				if tag == "" || strings.HasSuffix(tag, ".sig") || !re.MatchString(tag) {
					t.Fatalf("Filter kept %q (value %q)", tag, value)
				}
				if extract == "" && value != tag {
					t.Fatalf("Filter without extract valued %q as %q", tag, value)
				}
			}
			got, err := s.Latest(tags)
			if err != nil {
				if !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Latest: %v, not ErrNoMatch", err)
				}
				continue
			}
			if !slices.Contains(tags, got) {
				t.Fatalf("Latest = %q, not a given tag", got)
			}
		}
	})
}

// FuzzParseVersion checks parseVersion, which parses a tag once with
// StrictNewVersion and no "v", against what Masterminds' regular
// expression parser makes of the same tag: every tag it accepts parses
// there too, to the same version (precedence, pre-release and build
// metadata), so ranges and ordering are unchanged.
func FuzzParseVersion(f *testing.F) {
	for _, seed := range []string{
		"1.2.3", "v1.2.3", "v1.2.3-rc.1", "1.2.3-rc-1+build.5", "0.0.0", "01.2.3",
		"1.2", "v", "1.2.3-", "1.2.3+", "1.2.3-alpha.01", "1.2.3-0", "18446744073709551616.0.0",
		"1.2.3-rc.1+b.2-x", "V1.2.3", "1.2.3 ", "api-0.20.0", "03300208",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		v, err := parseVersion(tag)
		if err != nil {
			return
		}
		want, err := semver.NewVersion(tag)
		if err != nil {
			t.Fatalf("parseVersion accepts %q, semver.NewVersion does not: %v", tag, err)
		}
		if v.Compare(want) != 0 || v.Prerelease() != want.Prerelease() || v.Metadata() != want.Metadata() || v.String() != want.String() {
			t.Fatalf("%q: parseVersion gives %s (pre %q, meta %q), semver.NewVersion %s (pre %q, meta %q)",
				tag, v, v.Prerelease(), v.Metadata(), want, want.Prerelease(), want.Metadata())
		}
	})
}

// FuzzExclusion checks that an exclusionList entry matches exactly the
// tags its regular expression matches, whether it is matched as a suffix
// (^.*SUFFIX$) or by running the expression.
func FuzzExclusion(f *testing.F) {
	for _, seed := range [][2]string{
		{`^.*\.sig$`, "sha256-abc.sig"},
		{`^.*\.sig$`, "a\n.sig"},
		{`^.*\.sig$`, ".sig"},
		{`^.*\.sig$`, "x.SIG"},
		{`^.*-rc$`, "1.0.0-rc"},
		{`(?i)^.*\.sig$`, "x.SIG"},
		{`^.*\.sig`, "x.sig.att"},
		{`.*\.sig$`, "\n.sig"},
		{`^.*é$`, "\xffé"},
		{`^(?s).*\.sig$`, "a\n.sig"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, tag string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		e := newExclusion(re)
		if got, want := e.match(tag), re.MatchString(tag); got != want {
			t.Fatalf("exclusion %q (suffix %q, fast %v) matches %q: %v, the regexp says %v", pattern, e.suffix, e.fast, tag, got, want)
		}
	})
}

// TestExclusionFastPath checks which exclusionList entries are matched as
// a suffix; FuzzExclusion checks that both ways match the same tags.
func TestExclusionFastPath(t *testing.T) {
	for _, tc := range []struct {
		pattern, suffix string
		fast            bool
	}{
		{`^.*\.sig$`, ".sig", true},
		{`^.*-rc\.1$`, "-rc.1", true},
		{`^.*\.sig`, "", false},
		{`.*\.sig$`, "", false},
		{`(?i)^.*\.sig$`, "", false},
		{`(?s)^.*\.sig$`, "", false},
		{`^.+\.sig$`, "", false},
		{`^.*\.(sig|att)$`, "", false},
		{`^sha256-.*$`, "", false},
	} {
		e := newExclusion(regexp.MustCompile(tc.pattern))
		if e.fast != tc.fast || e.suffix != tc.suffix {
			t.Errorf("%s: fast %v suffix %q; want %v %q", tc.pattern, e.fast, e.suffix, tc.fast, tc.suffix)
		}
	}
}
