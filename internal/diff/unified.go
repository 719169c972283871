package diff

import "github.com/ferry-ci/ferry/internal/unified"

// Unified returns the unified diff of two texts (hunks only, no file
// headers), line by line; "" when they are equal.
func Unified(a, b string) string {
	return unified.Hunks(a, b)
}
