package release

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/ferry-ci/ferry/internal/output"
)

// Info is what a ferry binary says of its build (`ferry version`).
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// ReadInfo takes the values the build stamped (Build's -X main.version,
// main.commit and main.date; version "dev" when unstamped), and fills
// what it did not from the Go build information: the module version of
// `go install ...@vX.Y.Z`, the commit and its time of a build inside a
// Git checkout.
func ReadInfo(version, commit, date string) Info {
	b := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true" && commit == ""
		}
	}
	return b
}

// Formats are text and json (output.Result).
func (b Info) Formats() []output.Format { return []output.Format{output.Text, output.JSON} }

// Write writes the build information in f.
func (b Info) Write(w io.Writer, f output.Format) error {
	switch f {
	case output.Text:
		_, err := fmt.Fprintln(w, b.text())
		return err
	case output.JSON:
		return output.WriteJSON(w, b)
	}
	return output.Check(f, b.Formats())
}

// text is one line: "ferry v1.2.3 linux/amd64 go1.26.8 (commit 0123456789ab, 2026-12-05T07:00:00Z)".
func (b Info) text() string {
	s := fmt.Sprintf("ferry %s %s %s", b.Version, b.Platform, b.GoVersion)
	if b.Commit == "" {
		return s
	}
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if b.Modified {
		c += ", modified"
	}
	if t, err := time.Parse(time.RFC3339, b.Date); err == nil {
		c += ", " + t.UTC().Format(time.RFC3339)
	}
	return s + " (commit " + c + ")"
}
