package markdown_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-ci/ferry/internal/markdown"
)

// Small blocks share a part in order; blank ones are dropped; a block
// longer than a part is cut, and every part after the cut reopens the
// <details> section and the code fence that were open, and closes them.
// (forge's Sticky tests cover the cuts further, through Split.)
func TestPack(t *testing.T) {
	if got := markdown.Pack(nil, 100); len(got) != 0 {
		t.Errorf("Pack(nil) = %q, want no parts", got)
	}
	if got := markdown.Pack([]string{"a", " \n", "b"}, 100); len(got) != 1 || got[0] != "a\n\nb" {
		t.Errorf("Pack of two small blocks = %q, want one part %q", got, "a\n\nb")
	}

	var b strings.Builder
	b.WriteString("<details><summary>ConfigMap/default/app</summary>\n\n```diff\n")
	for i := range 40 {
		fmt.Fprintf(&b, "-  key%d: old\n+  key%d: new\n", i, i)
	}
	b.WriteString("```\n\n</details>")
	parts := markdown.Pack([]string{"summary", b.String()}, 300)
	if len(parts) < 3 {
		t.Fatalf("%d parts, want the long block cut", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 300 {
			t.Errorf("part %d: %d characters, want at most 300", i+1, n)
		}
		if i == 0 {
			continue
		}
		if !strings.HasPrefix(p, "<details><summary>ConfigMap/default/app</summary>") || !strings.Contains(p, "```diff") {
			t.Errorf("part %d does not reopen the section and its fence:\n%s", i+1, p)
		}
		if strings.Count(p, "```")%2 != 0 || strings.Count(p, "<details>") != strings.Count(p, "</details>") {
			t.Errorf("part %d leaves a fence or section open:\n%s", i+1, p)
		}
	}
}
