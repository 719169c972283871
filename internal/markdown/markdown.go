// Package markdown puts text from manifests, clusters and repositories
// into the markdown ferry writes (pull request comments, step summaries,
// issues) so that it shows as the text it is: it cannot become HTML,
// links, emphasis, headings or extra table cells, nor close the code span
// or code fence it is quoted in. Pack splits a report too long for one
// comment into parts that each render on their own.
package markdown

import "strings"

var text = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;",
	"\\", "\\\\", "|", "\\|", "`", "&#96;", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]",
	"#", "\\#", "!", "\\!", "~", "\\~",
	"\r", " ", "\n", " ",
)

// Text is s as plain text on one line, safe in running text and in a table
// cell: HTML is neutralized, markdown's punctuation escaped, line breaks
// become spaces.
func Text(s string) string { return text.Replace(s) }

var code = strings.NewReplacer("`", "'", "|", "¦", "\r", `\r`, "\n", `\n`)

// Code is s quoted as an inline code span, which markdown shows verbatim
// (no HTML, no links), safe in a table cell: a backtick cannot close it (it
// becomes '), a pipe cannot end the cell (it becomes ¦), and line breaks
// show as \n and \r.
func Code(s string) string { return "`" + code.Replace(s) + "`" }

// Fence is text as a fenced code block in language lang, fenced with more
// backticks than any run inside it, so the content cannot close it.
func Fence(lang, text string) string {
	longest, run := 0, 0
	for _, c := range text {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return f + lang + "\n" + text + f + "\n"
}
