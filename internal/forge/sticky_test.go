package forge_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
)

// objectBlock is one collapsible section of a diff report, as the diff
// renderer writes it: escaped name in the summary, a diff fence inside
// (whose raw `<script>` the code block escapes by itself).
func objectBlock(i, lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>Deployment/apps/web-%d &lt;script&gt;alert(%d)&lt;/script&gt;</summary>\n\n```diff\n", i, i)
	for j := range lines {
		fmt.Fprintf(&b, "-  image: reg.example/app-%d:1.%d.0 # é日本 <script>alert(%d)</script>\n+  image: reg.example/app-%d:1.%d.1\n", i, j, j, i, j)
	}
	b.WriteString("```\n\n</details>")
	return b.String()
}

func summaryBlocks() []string {
	return []string{
		"### ferry diff\n\n| target | added | changed | removed |\n|---|---|---|---|\n| stage | 1 | 2 | 0 |",
		"> **Warning**: `Deployment/apps/web` changes `spec.selector`, an immutable field.",
	}
}

// hugeReport is a report several comments long: many ordinary sections and
// one section far longer than a comment.
func hugeReport() []string {
	blocks := summaryBlocks()
	for i := range 30 {
		blocks = append(blocks, objectBlock(i, 40))
	}
	blocks = append(blocks, objectBlock(999, 2500))
	for i := 30; i < 35; i++ {
		blocks = append(blocks, objectBlock(i, 10))
	}
	return blocks
}

var fenceRE = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// checkStructure fails when part leaves a code fence or a <details> open,
// closes one it did not open, or is longer than limit.
func checkStructure(t *testing.T, name, part string, limit int) {
	t.Helper()
	if n := utf8.RuneCountInString(part); n > limit {
		t.Errorf("%s: %d characters, limit %d", name, n, limit)
	}
	fence, details := "", 0
	for i, line := range strings.Split(part, "\n") {
		m := fenceRE.FindStringSubmatch(line)
		if fence != "" {
			if m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(line[len(m[0]):]) == "" {
				fence = ""
			}
			continue
		}
		if m != nil {
			fence = m[1]
			continue
		}
		details += strings.Count(line, "<details") - strings.Count(line, "</details>")
		if details < 0 {
			t.Errorf("%s line %d: </details> without <details>", name, i+1)
			details = 0
		}
	}
	if fence != "" {
		t.Errorf("%s: code fence %s left open", name, fence)
	}
	if details != 0 {
		t.Errorf("%s: %d <details> left open", name, details)
	}
}

// checkLinesKept fails unless every line of blocks is found, in order, in
// the parts.
func checkLinesKept(t *testing.T, blocks, parts []string) {
	t.Helper()
	var got []string
	for _, p := range parts {
		got = append(got, strings.Split(p, "\n")...)
	}
	i := 0
	for _, b := range blocks {
		for _, want := range strings.Split(b, "\n") {
			for i < len(got) && got[i] != want {
				i++
			}
			if i == len(got) {
				t.Fatalf("line %q of the report is missing from the parts (or out of order)", want)
			}
			i++
		}
	}
}

func TestSplitSmallReportIsOnePart(t *testing.T) {
	s := forge.Sticky{Key: "diff"}
	parts := s.Split(summaryBlocks())
	want := []string{"<!-- ferry:diff part 1 -->\n" + strings.Join(summaryBlocks(), "\n\n")}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Errorf("Split (-want +got):\n%s", diff)
	}
	if got := s.Split(nil); len(got) != 0 {
		t.Errorf("Split(nil) = %q, want no parts", got)
	}
}

func TestSplitHugeReport(t *testing.T) {
	for _, limit := range []int{forge.DefaultLimit, 4096, 1024} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			s := forge.Sticky{Key: "diff", Limit: limit, MaxParts: 10000}
			blocks := hugeReport()
			parts := s.Split(blocks)
			if len(parts) < 3 {
				t.Fatalf("%d parts, want several", len(parts))
			}
			for i, p := range parts {
				name := fmt.Sprintf("part %d/%d", i+1, len(parts))
				if !strings.HasPrefix(p, fmt.Sprintf("<!-- ferry:diff part %d -->\n", i+1)) {
					t.Errorf("%s does not start with its marker: %.60q", name, p)
				}
				footer := fmt.Sprintf("continued in next comment (part %d/%d)", i+2, len(parts))
				if last := i == len(parts)-1; strings.Contains(p, "continued in next comment") == last ||
					(!last && !strings.HasSuffix(p, footer+"</sub>")) {
					t.Errorf("%s: footer wrong, ends %q", name, p[max(0, len(p)-80):])
				}
				checkStructure(t, name, p, limit)
			}
			checkLinesKept(t, blocks, parts)
			if first := parts[0]; !strings.Contains(first, "### ferry diff") || !strings.Contains(first, "**Warning**") {
				t.Errorf("part 1 does not open with the summary and warnings")
			}
			if again := s.Split(blocks); !slices.Equal(parts, again) {
				t.Error("Split is not deterministic")
			}
		})
	}
}

func TestSplitTruncates(t *testing.T) {
	s := forge.Sticky{Key: "diff", Limit: 4096, MaxParts: 3}
	parts := s.Split(hugeReport())
	if len(parts) != 3 {
		t.Fatalf("%d parts, want MaxParts = 3", len(parts))
	}
	last := parts[2]
	if !strings.Contains(last, "Report truncated") || !strings.Contains(last, "step summary") {
		t.Errorf("last part does not say the report was truncated: ...%s", last[max(0, len(last)-300):])
	}
	for i, p := range parts {
		checkStructure(t, fmt.Sprintf("part %d", i+1), p, 4096)
	}
	if !strings.Contains(parts[1], "continued in next comment (part 3/3)") {
		t.Error("part 2 does not point at part 3/3")
	}
}

// A line longer than a comment is cut inside, but never inside an HTML
// entity: escaped text stays escaped.
func TestSplitLongLineKeepsEntities(t *testing.T) {
	line := strings.Repeat("&lt;script&gt;é", 3000)
	s := forge.Sticky{Key: "k", Limit: 1024, MaxParts: 1000}
	parts := s.Split([]string{"<details><summary>x</summary>\n\n" + line + "\n\n</details>"})
	if len(parts) < 10 {
		t.Fatalf("%d parts, want the line cut into many", len(parts))
	}
	entity := regexp.MustCompile(`&(lt|gt|amp|quot|#[0-9]+);`)
	var joined strings.Builder
	for i, p := range parts {
		checkStructure(t, fmt.Sprintf("part %d", i+1), p, 1024)
		if rest := entity.ReplaceAllString(p, ""); strings.Contains(rest, "&") {
			t.Errorf("part %d cuts an entity: %q", i+1, rest[strings.Index(rest, "&"):min(len(rest), strings.Index(rest, "&")+12)])
		}
		for _, l := range strings.Split(p, "\n") {
			if strings.HasPrefix(l, "&lt;") || strings.HasPrefix(l, "lt;") || strings.HasPrefix(l, "t;") || strings.HasPrefix(l, "é") {
				joined.WriteString(l)
			}
		}
	}
	if joined.String() != line {
		t.Error("the pieces of the long line do not add up to it")
	}
}

func TestSplitOpenDetailsAndFenceReopened(t *testing.T) {
	s := forge.Sticky{Key: "k", Limit: 1024, MaxParts: 100}
	block := objectBlock(1, 60)
	parts := s.Split([]string{block})
	if len(parts) < 2 {
		t.Fatalf("%d parts, want the block cut", len(parts))
	}
	for i, p := range parts[1:] {
		if !strings.Contains(p, "<details><summary>Deployment/apps/web-1") || !strings.Contains(p, "```diff") {
			t.Errorf("part %d does not reopen the section and its diff fence:\n%.300s", i+2, p)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add(objectBlock(1, 50), "plain text\nmore", 1024)
	f.Add("```\nunclosed\n~~~\n", "<details>\n<summary>s</summary>\n\n````md\n```\n````\n</details>", 1500)
	f.Add(strings.Repeat("x", 5000), "&amp;&lt;", 1024)
	f.Fuzz(func(t *testing.T, a, b string, limit int) {
		if limit < 1024 || limit > 1<<16 || !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Skip()
		}
		// A section or fence opened by a line too long to repeat in every
		// part cannot be reopened within the limit; such input is left out.
		for _, l := range strings.Split(a+"\n"+b, "\n") {
			if utf8.RuneCountInString(l) > limit/8 && (strings.Contains(l, "<details") || fenceRE.MatchString(l) || strings.Contains(l, "<summary")) {
				t.Skip()
			}
		}
		s := forge.Sticky{Key: "k", Limit: limit, MaxParts: 1 << 20}
		for i, p := range s.Split([]string{a, b}) {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Errorf("part %d: %d characters > %d", i+1, n, limit)
			}
			if !strings.HasPrefix(p, fmt.Sprintf("<!-- ferry:k part %d -->", i+1)) {
				t.Errorf("part %d lacks its marker", i+1)
			}
		}
	})
}

func TestStickyCreatesOnceThenEditsInPlace(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		s := forge.Sticky{Key: "diff"}
		var id int64
		for run, body := range []string{"first run", "second run: 1 change", "third run: 2 changes"} {
			blocks := append(summaryBlocks(), body)
			res, err := s.Sync(ctx, w.ferry, w.pr, blocks)
			if err != nil {
				t.Fatalf("run %d: %v", run+1, err)
			}
			switch run {
			case 0:
				if len(res.Created) != 1 || res.Writes() != 1 {
					t.Fatalf("run 1: %+v, want one comment created", res)
				}
				id = res.Created[0]
				if res.URL == "" {
					t.Error("run 1: no URL for part 1")
				}
			default:
				if !slices.Equal(res.Edited, []int64{id}) || res.Writes() != 1 {
					t.Fatalf("run %d: %+v, want comment %d edited and nothing else", run+1, res, id)
				}
			}
			if res.ID != id {
				t.Errorf("run %d: part 1 is %d, want %d", run+1, res.ID, id)
			}
			got := mine(w.comments(t), w.me, "diff")
			if len(got) != 1 || got[0].ID != id {
				t.Fatalf("run %d: ferry's comments %+v, want just %d", run+1, got, id)
			}
			if want := s.Split(blocks)[0]; strings.TrimSpace(got[0].Body) != strings.TrimSpace(want) {
				t.Errorf("run %d: comment body\n%s\nwant\n%s", run+1, got[0].Body, want)
			}
		}
	})
}

func TestStickyNoOpRunWritesNothing(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		s := forge.Sticky{Key: "diff"}
		blocks := hugeReport()
		first, err := s.Sync(ctx, w.ferry, w.pr, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if first.Parts < 2 || len(first.Created) != first.Parts {
			t.Fatalf("first run: %+v, want several parts created", first)
		}
		w.ferry.Writes()
		before := 0
		if w.serverWrites != nil {
			before = w.serverWrites()
		}
		again, err := s.Sync(ctx, w.ferry, w.pr, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if again.Writes() != 0 || !slices.Equal(again.Unchanged, first.Created) {
			t.Errorf("second run: %+v, want every part unchanged", again)
		}
		if calls := w.ferry.Writes(); len(calls) != 0 {
			t.Errorf("second run made write calls %v", calls)
		}
		if w.serverWrites != nil && w.serverWrites() != before {
			t.Errorf("the server saw %d write requests in the second run", w.serverWrites()-before)
		}
	})
}

func TestStickySplitsThenShrinks(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		s := forge.Sticky{Key: "diff"}
		if _, err := s.Sync(ctx, w.ferry, w.pr, []string{"small report"}); err != nil {
			t.Fatal(err)
		}
		blocks := hugeReport()
		big, err := s.Sync(ctx, w.ferry, w.pr, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if big.Parts < 3 || len(big.Edited) != 1 || len(big.Created) != big.Parts-1 || len(big.Deleted) != 0 {
			t.Fatalf("huge report: %+v, want part 1 edited and the others created", big)
		}
		got := mine(w.comments(t), w.me, "diff")
		if len(got) != big.Parts {
			t.Fatalf("%d ferry comments on the pull request, want %d", len(got), big.Parts)
		}
		var bodies []string
		for i, c := range got {
			if !strings.HasPrefix(c.Body, fmt.Sprintf("<!-- ferry:diff part %d -->", i+1)) {
				t.Errorf("comment %d is not part %d: %.40q", i+1, i+1, c.Body)
			}
			checkStructure(t, fmt.Sprintf("comment %d", i+1), c.Body, forge.DefaultLimit)
			bodies = append(bodies, c.Body)
		}
		checkLinesKept(t, blocks, bodies)

		if w.render != nil {
			checkRendered(t, w, bodies)
		}

		small, err := s.Sync(ctx, w.ferry, w.pr, summaryBlocks())
		if err != nil {
			t.Fatal(err)
		}
		if small.Parts != 1 || small.ID != big.ID || len(small.Deleted) != big.Parts-1 {
			t.Fatalf("shrunk report: %+v, want part 1 (%d) kept and %d parts deleted", small, big.ID, big.Parts-1)
		}
		got = mine(w.comments(t), w.me, "diff")
		if len(got) != 1 || got[0].ID != big.ID {
			t.Fatalf("after shrinking, ferry's comments are %+v, want just %d", got, big.ID)
		}

		gone, err := s.Sync(ctx, w.ferry, w.pr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gone.Deleted, []int64{big.ID}) || len(mine(w.comments(t), w.me, "diff")) != 0 {
			t.Errorf("no blocks: %+v, want the report deleted", gone)
		}
	})
}

// checkRendered renders each part as the forge does and checks that its
// structure survived: sections and code blocks closed, footer outside
// code, nothing of the manifests turned into HTML.
func checkRendered(t *testing.T, w *world, bodies []string) {
	t.Helper()
	pre := regexp.MustCompile(`(?s)<pre.*?</pre>`)
	for i, b := range bodies {
		html := w.render(t, b)
		name := fmt.Sprintf("rendered part %d", i+1)
		if o, c := strings.Count(html, "<details"), strings.Count(html, "</details>"); o == 0 || o != c {
			t.Errorf("%s: %d <details> and %d </details>", name, o, c)
		}
		if !strings.Contains(html, "<summary>") {
			t.Errorf("%s: no <summary>", name)
		}
		if o, c := strings.Count(html, "<pre"), strings.Count(html, "</pre>"); o == 0 || o != c {
			t.Errorf("%s: %d <pre> and %d </pre>", name, o, c)
		}
		if strings.Contains(strings.ToLower(html), "<script") {
			t.Errorf("%s: a <script> element came through", name)
		}
		if !strings.Contains(html, "&lt;script&gt;") {
			t.Errorf("%s: the escaped <script> text is gone", name)
		}
		outside := pre.ReplaceAllString(html, "")
		if i < len(bodies)-1 && !strings.Contains(outside, "continued in next comment") {
			t.Errorf("%s: the footer is inside a code block (or missing)", name)
		}
		if strings.Contains(outside, "image: reg.example") {
			t.Errorf("%s: diff lines outside a code block: a fence broke", name)
		}
	}
}

func TestStickyLeavesOtherUsersCommentsAlone(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		s := forge.Sticky{Key: "diff"}
		// Someone else posts comments carrying ferry's markers.
		var theirs []forge.Comment
		for i := 1; i <= 2; i++ {
			c, err := w.other.CreateComment(ctx, w.pr, fmt.Sprintf("<!-- ferry:diff part %d -->\nnot ferry's report, part %d", i, i))
			if err != nil {
				t.Fatal(err)
			}
			theirs = append(theirs, c)
		}
		check := func(step string) {
			t.Helper()
			all := w.comments(t)
			for _, want := range theirs {
				i := slices.IndexFunc(all, func(c forge.Comment) bool { return c.ID == want.ID })
				if i < 0 {
					t.Fatalf("%s: the other user's comment %d was deleted", step, want.ID)
				}
				if all[i].Body != want.Body {
					t.Fatalf("%s: the other user's comment %d was edited: %q", step, want.ID, all[i].Body)
				}
			}
		}
		res, err := s.Sync(ctx, w.ferry, w.pr, []string{"ferry's report"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Created) != 1 || res.Writes() != 1 {
			t.Errorf("first run: %+v, want ferry's own comment created", res)
		}
		check("first run")
		if _, err := s.Sync(ctx, w.ferry, w.pr, hugeReport()); err != nil {
			t.Fatal(err)
		}
		check("huge report")
		res, err = s.Sync(ctx, w.ferry, w.pr, []string{"small again"})
		if err != nil {
			t.Fatal(err)
		}
		check("shrunk report")
		if got := mine(w.comments(t), w.me, "diff"); len(got) != 1 || got[0].ID != res.ID {
			t.Errorf("ferry's comments %+v, want just %d", got, res.ID)
		}
		// Another key is another report.
		other := forge.Sticky{Key: "drift"}
		if res, err := other.Sync(ctx, w.ferry, w.pr, []string{"drift report"}); err != nil || len(res.Created) != 1 {
			t.Fatalf("a second key: %+v, %v; want its own comment", res, err)
		}
		if got := mine(w.comments(t), w.me, "diff"); len(got) != 1 {
			t.Errorf("the drift report touched the diff report: %+v", got)
		}
	})
}

func TestStickyRejectsBadKeysAndLimits(t *testing.T) {
	for _, s := range []forge.Sticky{{Key: ""}, {Key: "a b"}, {Key: "x-->"}, {Key: "ok", Limit: 100}} {
		if _, err := s.Sync(context.Background(), nil, 1, []string{"x"}); err == nil {
			t.Errorf("Sync with %+v: no error", s)
		}
	}
}
