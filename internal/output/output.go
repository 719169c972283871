// Package output is the contract of what ferry's commands print: one set
// of formats, one method every printed result offers (Result), and one
// error for a format a result does not offer.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Format is a way to print a result.
type Format string

// The formats. Every result offers Text and JSON; reports also offer
// Markdown (what a step summary or a pull-request comment shows).
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
)

// All is every format, in the order a flag's help lists them.
var All = []Format{Text, JSON, Markdown}

// Result is what a command prints. Write writes it in f, one of Formats;
// any other f is an *UnknownFormatError and nothing is written.
type Result interface {
	Formats() []Format
	Write(w io.Writer, f Format) error
}

// UnknownFormatError is the error of a format a result does not offer.
type UnknownFormatError struct {
	Format  Format
	Offered []Format
}

func (e *UnknownFormatError) Error() string {
	return fmt.Sprintf("unknown format %q: want %s", e.Format, OrList(Names(e.Offered)))
}

// Check returns the *UnknownFormatError of f when offered lacks it.
func Check(f Format, offered []Format) error {
	if slices.Contains(offered, f) {
		return nil
	}
	return &UnknownFormatError{Format: f, Offered: offered}
}

// Names are the formats' names.
func Names(fs []Format) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// WriteJSON writes v as every JSON result is written: indented by two
// spaces, a newline at the end.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// OrList is "a, b or c".
func OrList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// IsTerminal reports whether w writes to a terminal, itself or through
// the writers it wraps (a masking one, say: an Unwrap() io.Writer).
func IsTerminal(w any) bool {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
