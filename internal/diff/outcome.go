package diff

import (
	"fmt"
	"strings"
)

// Err names the targets that failed to render or to compare with their
// cluster; nil when none did.
func (r *Report) Err() error {
	var names []string
	for _, t := range r.Targets {
		if t.Error != "" {
			names = append(names, fmt.Sprintf("%s (render failed at %s)", t.Name, t.Side))
		}
		if t.LiveError != "" {
			names = append(names, fmt.Sprintf("%s (live comparison failed)", t.Name))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("targets failed: %s", strings.Join(names, ", "))
}

// TargetNames lists the names of the report's targets.
func (r *Report) TargetNames() []string {
	names := []string{}
	for _, t := range r.Targets {
		names = append(names, t.Name)
	}
	return names
}
