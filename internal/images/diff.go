package images

import (
	"strings"

	"github.com/ferry-ci/ferry/internal/unified"
)

// UnifiedDiff renders the change of one file as a unified diff with a/
// and b/ prefixes, as git diff prints it (git apply takes it).
func (f FileChange) UnifiedDiff() string {
	return unified.File(f.Path, string(f.Old), string(f.New))
}

// UnifiedDiff renders every file's change, in path order.
func (cs *ChangeSet) UnifiedDiff() string {
	var b strings.Builder
	for _, f := range cs.Files {
		b.WriteString(f.UnifiedDiff())
	}
	return b.String()
}
