package render

import (
	"fmt"
	"reflect"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// HideIn replaces, in the rendered objects of results, every value mask
// changes (ferry's own credentials: its tokens, FERRY_SECRET_* and
// registry passwords), before they are encoded: render shows decrypted
// values by design, never the runner's. It returns a warning naming each
// object that held one.
func HideIn(results []*Result, mask func(any) any) []string {
	var warnings []string
	for _, res := range results {
		for _, o := range res.Set.Objects {
			masked, ok := mask(o.Object).(map[string]any)
			if !ok || reflect.DeepEqual(masked, o.Object) {
				continue
			}
			o.Object = masked
			warnings = append(warnings, fmt.Sprintf("target %q: %s holds a credential of ferry's environment (a token, FERRY_SECRET_* or registry password); it is printed as ***", res.Name, manifest.IDOf(o)))
		}
	}
	return warnings
}
