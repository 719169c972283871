package unified_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/unified"
)

func TestHunks(t *testing.T) {
	for name, tc := range map[string]struct{ a, b, want string }{
		"equal":   {"a\nb\n", "a\nb\n", ""},
		"created": {"", "x\n", "@@ -0,0 +1 @@\n+x\n"},
		"deleted": {"x\ny\n", "", "@@ -1,2 +0,0 @@\n-x\n-y\n"},
		"changed with context": {
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		"far apart changes make two hunks": {
			"a\n1\n2\n3\n4\n5\n6\n7\nb\n", "A\n1\n2\n3\n4\n5\n6\n7\nB\n",
			"@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n",
		},
		"missing final newline is not shown": {"a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unified.Hunks(tc.a, tc.b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFile(t *testing.T) {
	for name, tc := range map[string]struct{ old, new, want string }{
		"equal": {"a\n", "a\n", ""},
		"changed": {"a\nb\n", "a\nc\n",
			"--- a/f.yaml\n+++ b/f.yaml\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		"newline added at the end": {"a", "a\n",
			"--- a/f.yaml\n+++ b/f.yaml\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unified.File("f.yaml", tc.old, tc.new)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
