package markdown_test

import (
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/markdown"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":                    "plain name",
		"<img src=x onerror=alert(1)>":  "&lt;img src=x onerror=alert(1)&gt;",
		"a | b":                         "a \\| b",
		"[click](https://evil.example)": "\\[click\\](https://evil.example)",
		"**bold** _it_ ~~s~~ # h !x":    "\\*\\*bold\\*\\* \\_it\\_ \\~\\~s\\~\\~ \\# h \\!x",
		"two\nlines\r\n":                "two lines  ",
		"`code` and \\":                 "&#96;code&#96; and \\\\",
		"&amp; stays an ampersand":      "&amp;amp; stays an ampersand",
	} {
		if got := markdown.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"ConfigMap/default/app": "`ConfigMap/default/app`",
		"a`b":                   "`a'b`",
		"x | y":                 "`x ¦ y`",
		"line\nbreak\r":         "`line\\nbreak\\r`",
	} {
		if got := markdown.Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFence(t *testing.T) {
	got := markdown.Fence("diff", "+a\n````\n-b")
	want := "`````diff\n+a\n````\n-b\n`````\n"
	if got != want {
		t.Errorf("Fence = %q, want %q", got, want)
	}
	if got := markdown.Fence("text", "x\n"); !strings.HasPrefix(got, "```text\n") || !strings.HasSuffix(got, "\n```\n") {
		t.Errorf("Fence of plain text = %q", got)
	}
}
