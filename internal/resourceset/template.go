package resourceset

import (
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/gosimple/slug"
	"sigs.k8s.io/yaml"
)

// Delimiters of a ResourceSet template: << and >> instead of Go's braces,
// so a ResourceSet can sit in a Helm chart.
const (
	leftDelim  = "<<"
	rightDelim = ">>"
)

// notInOperator are the hermetic sprig functions the operator's templates
// lack (it uses slim-sprig): a template calling one fails in the cluster,
// so it fails here too instead of rendering what the cluster cannot.
var notInOperator = []string{
	"abbrev", "abbrevboth", "add1f", "addf", "bcrypt", "buildCustomCert",
	"camelcase", "decryptAES", "deepCopy", "derivePassword", "divf",
	"encryptAES", "genCA", "genCAWithKey", "genPrivateKey",
	"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert",
	"genSignedCertWithKey", "htpasswd", "initials", "kebabcase", "merge",
	"mergeOverwrite", "mulf", "mustDeepCopy", "mustMerge",
	"mustMergeOverwrite", "nospace", "semver", "semverCompare", "sha512sum",
	"shuffle", "snakecase", "subf", "swapcase", "untitle", "wrap", "wrapWith",
}

// funcs is the function map of every template: sprig's hermetic functions
// that the operator also has, plus those the ResourceSet documentation
// adds (slugify, toYaml, mustToYaml), and inputs, which execute binds to
// each input set in turn.
func funcs(inputs map[string]any) template.FuncMap {
	m := sprig.HermeticTxtFuncMap()
	for _, name := range notInOperator {
		delete(m, name)
	}
	bound(m)
	m["slugify"] = slugify
	m["toYaml"] = toYAML
	m["mustToYaml"] = mustToYAML
	m["inputs"] = func() map[string]any { return inputs }
	return m
}

// toYAML renders a value as YAML, final newline included (unlike Helm's
// toYaml); a value that cannot be rendered gives "".
func toYAML(v any) string {
	s, err := mustToYAML(v)
	if err != nil {
		return ""
	}
	return s
}

// mustToYAML is toYAML failing the template on a value it cannot render.
func mustToYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return string(data), nil
}

// maxSlug is the longest a label value may be.
const maxSlug = 63

// slugify makes s fit a label value: transliterated to ASCII, lower case,
// runs of other characters than letters, digits and underscores turned
// into one dash, no dash or underscore at either end; past 63 characters
// it is cut at the last dash that keeps it within them, or at 63.
func slugify(s string) string {
	out := slug.Make(s)
	if len(out) <= maxSlug {
		return out
	}
	for i := maxSlug; i > 0; i-- {
		if out[i] == '-' {
			return out[:i]
		}
	}
	return out[:maxSlug]
}
