package images

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
)

// DefaultExclusionList is what an ImageRepository excludes when its
// exclusionList is empty, as Flux does: cosign signature tags.
var DefaultExclusionList = []string{`^.*\.sig$`}

// Orders of the numerical and alphabetical policies. ASC selects the
// highest value (Z, 9), DESC the lowest.
const (
	OrderAsc  = "ASC"
	OrderDesc = "DESC"
)

// Digest reflection policies: whether a full-image marker is written with
// the chosen tag's digest (name:tag@sha256:...), as Flux's
// ImagePolicy.spec.digestReflectionPolicy says. Without state between runs,
// IfNotPresent behaves as Always.
const (
	ReflectNever        = "Never"
	ReflectIfNotPresent = "IfNotPresent"
	ReflectAlways       = "Always"
)

// ErrNoMatch says that no tag of a repository is selected by a policy. It
// is a warning for ferry bump, not an error.
var ErrNoMatch = errors.New("no tag matches")

// Policy is an image policy: an ImageRepository + ImagePolicy pair found in
// the repository, or an entry of ferry.yaml with the same fields.
type Policy struct {
	Name      string
	Namespace string
	// Repository names the ImageRepository the policy reads; empty for a
	// ferry.yaml entry, which carries the repository's fields itself.
	Repository string
	// Origin says where the policy was declared (file:line).
	Origin string

	// Image is the image repository to scan, e.g. ghcr.io/org/app.
	Image string
	// ExclusionList holds regular expressions of tags that are never
	// considered; DefaultExclusionList when empty.
	ExclusionList []string
	// SecretRef names the Secret holding registry credentials; ferry maps
	// it to environment variables (see Credentials.Secrets).
	SecretRef string
	// Insecure allows plain HTTP to the registry.
	Insecure bool

	FilterTags *TagFilter
	// Exactly one of SemVer, Numerical and Alphabetical is set.
	SemVer       *SemVerPolicy
	Numerical    *OrderPolicy
	Alphabetical *OrderPolicy
	// DigestReflectionPolicy is Never (or empty), IfNotPresent or Always.
	DigestReflectionPolicy string
}

// TagFilter keeps the tags a regular expression matches and, with
// Extract, orders them by a value taken from the match ($name, ${name}
// or $1, as regexp.Expand reads it).
type TagFilter struct {
	Pattern string
	Extract string
}

// SemVerPolicy selects the highest version in a semver range.
type SemVerPolicy struct {
	Range string
}

// OrderPolicy selects by numerical or alphabetical order.
type OrderPolicy struct {
	Order string
}

// ID names the policy in messages: ImagePolicy/namespace/name.
func (p *Policy) ID() string { return "ImagePolicy/" + p.Namespace + "/" + p.Name }

// Ref is the name markers use for the policy: namespace:name.
func (p *Policy) Ref() string { return p.Namespace + ":" + p.Name }

// Registry is the host of the policy's image (index.docker.io for Docker
// Hub names), "" when the image is not a valid repository name.
func (p *Policy) Registry() string {
	r, err := name.NewRepository(p.Image)
	if err != nil {
		return ""
	}
	return r.RegistryStr()
}

// where is the policy's name with its origin, for error messages.
func (p *Policy) where() string {
	if p.Origin == "" {
		return p.ID()
	}
	return p.ID() + " (" + p.Origin + ")"
}

// Policer selects the latest of a list of tags.
type Policer interface {
	Latest(tags []string) (string, error)
}

var (
	_ Policer = (*SemVer)(nil)
	_ Policer = (*Numerical)(nil)
	_ Policer = (*Alphabetical)(nil)
	_ Policer = (*Selector)(nil)
)

// SemVer selects the highest tag that is a semantic version (with an
// optional leading v) within a range. Pre-releases are only selected when
// the range names one (">=1.0.0-0"), as Masterminds/semver and Flux do.
type SemVer struct {
	Range      string
	constraint *semver.Constraints
}

// NewSemVer parses a Masterminds/semver range.
func NewSemVer(r string) (*SemVer, error) {
	c, err := semver.NewConstraint(r)
	if err != nil {
		return nil, err
	}
	return &SemVer{Range: r, constraint: c}, nil
}

// Latest returns the highest version in the range. Tags that are not
// strict semantic versions are skipped. Of two tags of equal precedence
// (1.0.0 and v1.0.0, or differing build metadata) the one sorting last as
// a string wins, so the result does not depend on the registry's order.
func (p *SemVer) Latest(tags []string) (string, error) {
	var best *semver.Version
	bestTag := ""
	for _, tag := range tags {
		v, err := parseVersion(tag)
		if err != nil || !p.constraint.Check(v) {
			continue
		}
		if best == nil {
			best, bestTag = v, tag
			continue
		}
		switch c := v.Compare(best); {
		case c > 0, c == 0 && tag > bestTag:
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return "", fmt.Errorf("%w semver range %q", ErrNoMatch, p.Range)
	}
	return bestTag, nil
}

// parseVersion accepts strict semantic versions, with an optional leading
// "v": 1.2.3 and v1.2.3-rc.1, not 1.2 or 01.2.3. The version is parsed
// without its "v" (StrictNewVersion does not use a regular expression, so
// a registry's thousands of tags parse in microseconds); its Original()
// is then the tag without the "v", which is why Latest carries the tag.
func parseVersion(tag string) (*semver.Version, error) {
	return semver.StrictNewVersion(strings.TrimPrefix(tag, "v"))
}

// Numerical selects the tag with the highest (ASC) or lowest (DESC)
// number. Tags that are not finite numbers are skipped (Flux fails the
// whole policy on them). Equal numbers (7 and 007) are ordered as strings.
type Numerical struct {
	Order string
}

// NewNumerical validates the order (asc or desc, any case; ASC when empty).
func NewNumerical(order string) (*Numerical, error) {
	o, err := parseOrder(order)
	if err != nil {
		return nil, err
	}
	return &Numerical{Order: o}, nil
}

// Latest returns the highest (ASC) or lowest (DESC) number.
func (p *Numerical) Latest(tags []string) (string, error) {
	found := false
	var best string
	var bv float64
	for _, tag := range tags {
		v, err := strconv.ParseFloat(tag, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			continue
		}
		better := !found || v > bv || v == bv && tag > best
		if p.Order == OrderDesc {
			better = !found || v < bv || v == bv && tag < best
		}
		if better {
			found, best, bv = true, tag, v
		}
	}
	if !found {
		return "", fmt.Errorf("%w numerical order (no tag is a number)", ErrNoMatch)
	}
	return best, nil
}

// Alphabetical selects the tag sorting last (ASC) or first (DESC), byte
// by byte.
type Alphabetical struct {
	Order string
}

// NewAlphabetical validates the order (asc or desc, any case; ASC when
// empty).
func NewAlphabetical(order string) (*Alphabetical, error) {
	o, err := parseOrder(order)
	if err != nil {
		return nil, err
	}
	return &Alphabetical{Order: o}, nil
}

// Latest returns the tag sorting last (ASC) or first (DESC).
func (p *Alphabetical) Latest(tags []string) (string, error) {
	if len(tags) == 0 {
		return "", fmt.Errorf("%w alphabetical order (no tags)", ErrNoMatch)
	}
	best := tags[0]
	for _, t := range tags[1:] {
		if p.Order == OrderDesc && t < best || p.Order != OrderDesc && t > best {
			best = t
		}
	}
	return best, nil
}

func parseOrder(order string) (string, error) {
	switch o := strings.ToUpper(order); o {
	case "":
		return OrderAsc, nil
	case OrderAsc, OrderDesc:
		return o, nil
	}
	return "", fmt.Errorf("order %q: want asc or desc", order)
}

// Selector is a validated policy: exclusion list, tag filter and ordering.
type Selector struct {
	Policy  *Policy
	exclude []exclusion
	filter  *regexp.Regexp
	extract string
	policer Policer
}

// Compile validates a policy and returns its selector. Errors name the
// policy and the field: an invalid regular expression, an extract naming
// a group the pattern does not have, an invalid semver range or order.
func (p *Policy) Compile() (*Selector, error) {
	s := &Selector{Policy: p}
	fail := func(format string, args ...any) (*Selector, error) {
		return nil, fmt.Errorf("%s: %s", p.where(), fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(p.Image) == "" {
		return fail("no image to scan")
	}
	excl := p.ExclusionList
	if len(excl) == 0 {
		excl = DefaultExclusionList
	}
	for _, e := range excl {
		re, err := regexp.Compile(e)
		if err != nil {
			return fail("exclusionList: invalid regular expression %q: %v", e, regexpMessage(err))
		}
		s.exclude = append(s.exclude, newExclusion(re))
	}
	if f := p.FilterTags; f != nil {
		re, err := regexp.Compile(f.Pattern)
		if err != nil {
			return fail("filterTags.pattern: invalid regular expression %q: %v", f.Pattern, regexpMessage(err))
		}
		if err := checkExtract(re, f.Extract); err != nil {
			return fail("filterTags.extract %q: %v", f.Extract, err)
		}
		s.filter, s.extract = re, f.Extract
	}
	var kinds []string
	var err error
	if p.SemVer != nil {
		kinds = append(kinds, "semver")
		if s.policer, err = NewSemVer(p.SemVer.Range); err != nil {
			return fail("policy.semver.range %q: %v", p.SemVer.Range, err)
		}
	}
	if p.Numerical != nil {
		kinds = append(kinds, "numerical")
		if s.policer, err = NewNumerical(p.Numerical.Order); err != nil {
			return fail("policy.numerical.%v", err)
		}
	}
	if p.Alphabetical != nil {
		kinds = append(kinds, "alphabetical")
		if s.policer, err = NewAlphabetical(p.Alphabetical.Order); err != nil {
			return fail("policy.alphabetical.%v", err)
		}
	}
	switch len(kinds) {
	case 0:
		return fail("policy: want one of semver, numerical or alphabetical")
	case 1:
	default:
		return fail("policy: want one of semver, numerical or alphabetical, not %s", strings.Join(kinds, " and "))
	}
	switch p.DigestReflectionPolicy {
	case "", ReflectNever, ReflectIfNotPresent, ReflectAlways:
	default:
		return fail("digestReflectionPolicy %q: want Never, IfNotPresent or Always", p.DigestReflectionPolicy)
	}
	return s, nil
}

// regexpMessage drops the "error parsing regexp: " prefix regexp puts on
// its errors.
func regexpMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// checkExtract reports a reference in an extract template to a group the
// pattern does not have. It reads the template as regexp.Expand does:
// $name and ${name}, where name is the longest run of letters, digits
// and underscores, $1 by number, and $$ for a dollar sign.
func checkExtract(re *regexp.Regexp, tmpl string) error {
	names := map[string]bool{}
	for _, n := range re.SubexpNames() {
		if n != "" {
			names[n] = true
		}
	}
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '$' {
			continue
		}
		i++
		if i < len(tmpl) && tmpl[i] == '$' {
			continue
		}
		var name string
		if i < len(tmpl) && tmpl[i] == '{' {
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return fmt.Errorf("unterminated ${ at byte %d", i)
			}
			name = tmpl[i+1 : i+end]
			i += end
			if name == "" || !isGroupName(name) {
				return fmt.Errorf("${%s} is not a group name", name)
			}
		} else {
			j := i
			for j < len(tmpl) && isNameByte(tmpl[j]) {
				j++
			}
			name = tmpl[i:j]
			i = j - 1
			if name == "" {
				return fmt.Errorf("a $ not followed by a group name at byte %d (write $$ for a dollar sign)", i)
			}
		}
		if n, err := strconv.Atoi(name); err == nil {
			if n > re.NumSubexp() {
				return fmt.Errorf("group %d does not exist: the pattern has %d", n, re.NumSubexp())
			}
			continue
		}
		if !names[name] {
			return fmt.Errorf("the pattern has no group named %q%s", name, groupList(re))
		}
	}
	return nil
}

func groupList(re *regexp.Regexp) string {
	var named []string
	for _, n := range re.SubexpNames() {
		if n != "" {
			named = append(named, n)
		}
	}
	if len(named) == 0 {
		return " (it has no named groups)"
	}
	return " (it has " + strings.Join(named, ", ") + ")"
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isGroupName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// exclusion is a compiled exclusionList entry. An entry of the form
// ^.*SUFFIX$ (Flux's default ^.*\.sig$ is one) is matched as the suffix
// it is, without running the regular expression: a tag matches when it
// ends with the suffix and has no newline before it (. does not match
// one). Every other entry runs its regular expression.
type exclusion struct {
	re     *regexp.Regexp
	suffix string
	fast   bool
}

func newExclusion(re *regexp.Regexp) exclusion {
	e := exclusion{re: re}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return e
	}
	tree = tree.Simplify()
	sub := tree.Sub
	if tree.Op != syntax.OpConcat || len(sub) != 4 ||
		sub[0].Op != syntax.OpBeginText ||
		sub[1].Op != syntax.OpStar || sub[1].Sub[0].Op != syntax.OpAnyCharNotNL ||
		sub[2].Op != syntax.OpLiteral || sub[2].Flags&syntax.FoldCase != 0 ||
		sub[3].Op != syntax.OpEndText {
		return e
	}
	e.suffix, e.fast = string(sub[2].Rune), true
	return e
}

func (e exclusion) match(tag string) bool {
	if !e.fast {
		return e.re.MatchString(tag)
	}
	rest, ok := strings.CutSuffix(tag, e.suffix)
	return ok && strings.IndexByte(rest, '\n') < 0
}

// Filter returns the (non-empty) tags that are not excluded and match the pattern,
// each mapped to the value the policy orders it by (the extract, or the
// tag itself). When two tags extract the same value the one sorting last
// is kept, so the result does not depend on the registry's order.
func (s *Selector) Filter(tags []string) map[string]string {
	values, byValue := s.keep(tags)
	if byValue == nil {
		byValue = make(map[string]string, len(values))
		for _, v := range values {
			byValue[v] = v
		}
	}
	return byValue
}

// keep returns the values of the tags Filter keeps and, with an
// extract, the map of each value to its tag; without one the values are
// the tags and the map is nil.
func (s *Selector) keep(tags []string) ([]string, map[string]string) {
	var byValue map[string]string
	if s.extract != "" {
		byValue = make(map[string]string, len(tags))
	}
	values := make([]string, 0, len(tags))
tags:
	for _, tag := range tags {
		if tag == "" {
			continue
		}
		for _, e := range s.exclude {
			if e.match(tag) {
				continue tags
			}
		}
		if s.filter == nil {
			values = append(values, tag)
			continue
		}
		m := s.filter.FindStringSubmatchIndex(tag)
		if m == nil {
			continue
		}
		if byValue == nil {
			values = append(values, tag)
			continue
		}
		value := string(s.filter.ExpandString(nil, s.extract, tag, m))
		prev, ok := byValue[value]
		if !ok {
			values = append(values, value)
		}
		if !ok || tag > prev {
			byValue[value] = tag
		}
	}
	return values, byValue
}

// Latest returns the tag the policy selects from tags: excluded tags
// dropped, the filter applied, the rest ordered. It returns an error
// wrapping ErrNoMatch when no tag qualifies. Every policer breaks ties by
// comparing tags, so the order of tags does not matter.
func (s *Selector) Latest(tags []string) (string, error) {
	values, byValue := s.keep(tags)
	v, err := s.policer.Latest(values)
	if err != nil {
		return "", fmt.Errorf("%s: %w (%d tags, %d after exclusions and filterTags)", s.Policy.ID(), err, len(tags), len(values))
	}
	if byValue != nil {
		return byValue[v], nil
	}
	return v, nil
}

// Latest compiles the policy and selects the latest of tags.
func Latest(tags []string, p *Policy) (string, error) {
	s, err := p.Compile()
	if err != nil {
		return "", err
	}
	return s.Latest(tags)
}
