package secrets

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// flushCounter is a writer that holds lines back too, and counts Flush.
type flushCounter struct {
	bytes.Buffer
	flushed int
}

func (f *flushCounter) Flush() error { f.flushed++; return nil }

// TestWriter: what goes through a masker's Writer is masked, also a
// value split across writes and one the masker learns after the writer
// was made; the end of a line is held back until Flush, which flushes
// the wrapped writer too.
func TestWriter(t *testing.T) {
	m := NewMasker()
	m.Add("early-secret-1")
	out := &flushCounter{}
	w := m.Writer(out)
	writes := []string{"a early-secret-1 b\n", "split early-", "secret-1 across writes\n"}
	for _, s := range writes {
		if n, err := io.WriteString(w, s); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	m.Add("later-secret-2")
	fmt.Fprintf(w, "learned %s later\nno line end: later-", "later-secret-2")
	if got, want := out.String(), "a *** b\nsplit *** across writes\nlearned *** later\n"; got != want {
		t.Errorf("before Flush: %q, want %q", got, want)
	}
	fmt.Fprint(w, "secret-2")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "a *** b\nsplit *** across writes\nlearned *** later\nno line end: ***"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
	if out.flushed != 1 {
		t.Errorf("the wrapped writer was flushed %d times, want 1", out.flushed)
	}
	if w.Unwrap() != io.Writer(out) {
		t.Error("Unwrap does not return the wrapped writer")
	}
}
