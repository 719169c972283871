package acttest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pinnedUses is a uses: line pinned as the release workflows must be: a
// full commit and the tag it is, as a comment.
var pinnedUses = regexp.MustCompile(`^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s+(v\d+\.\d+\.\d+)\s*$`)

// TestReleaseWorkflowsPinActions: every third-party action of the release
// workflows is pinned by a full commit with its tag in a comment, and an
// action both workflows use is pinned to the same commit in both (so the
// Gitea workflow, which the runner tests run, stands for the GitHub one).
func TestReleaseWorkflowsPinActions(t *testing.T) {
	t.Parallel()
	pins := map[string]map[string]string{} // action -> commit -> workflow
	for _, wf := range []string{".github/workflows/release.yaml", ".gitea/workflows/release.yaml"} {
		b, err := os.ReadFile(filepath.Join(RepoRoot(), wf))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, line := range strings.Split(string(b), "\n") {
			if !usesLine.MatchString(line) || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			n++
			m := pinnedUses.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s:%d: %q is not pinned as owner/name@<40-hex commit> # vX.Y.Z", wf, i+1, strings.TrimSpace(line))
				continue
			}
			if pins[m[1]] == nil {
				pins[m[1]] = map[string]string{}
			}
			pins[m[1]][m[2]+" "+m[3]] = wf
		}
		if n < 3 {
			t.Errorf("%s: %d uses: lines, want checkout, setup-go and cosign-installer at least", wf, n)
		}
	}
	for action, commits := range pins {
		if len(commits) > 1 {
			t.Errorf("%s is pinned differently: %v", action, commits)
		}
	}
}
