package actionstest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The reader must find what the runner acts on, or the tests that use it
// prove nothing.
func TestCommands(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string // names
	}{
		{"plain text", "hello\nkind: Secret\na::b\n::1\n", nil},
		{"one command", "::error::x\n", []string{"error"}},
		{"properties", "::error file=a.yaml,line=3::x\n", []string{"error"}},
		{"leading white space", " \t\u00a0::warning::x\n", []string{"warning"}},
		{"no line end", "::notice::x", []string{"notice"}},
		{"after CR", "text\r::add-mask::v\r\n", []string{"add-mask"}},
		{"the older form, anywhere", "log ##[set-output name=x;]v\n", []string{"set-output"}},
		{"escaped", "\\::error::x\n##\\[error]x\n", nil},
		{
			"stop-commands ignores all but its token",
			"::stop-commands::tok\n::error::x\n::other::\n##[tok]\n::error::y\n",
			[]string{"stop-commands", "tok", "error"},
		},
		{"resumed in the runner's form", "::stop-commands::t%25k\n::error::x\n::t%k::\n", []string{"stop-commands", "t%k"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Commands(tc.stream) {
				got = append(got, c.Name)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
