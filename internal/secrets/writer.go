package secrets

import (
	"bytes"
	"io"
	"sync"
)

// Writer masks what is written through it before it reaches the writer
// it wraps: the only stream a command is handed, so that none of its
// writes can forget to mask. It masks whole lines (the masker works line
// by line), so it holds back a line not ended yet until its end or Flush;
// a value split across two writes of one line is found.
type Writer struct {
	m *Masker
	w io.Writer

	mu   sync.Mutex
	line []byte // the start of a line not ended yet
}

// Writer returns a writer that masks, with m, what it passes on to w.
func (m *Masker) Writer(w io.Writer) *Writer { return &Writer{m: m, w: w} }

// Write passes on the lines p ends, masked, and holds back the rest. It
// reports len(p) written when the lines were passed on, whatever masking
// made of their length.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	end := bytes.LastIndexByte(w.line, '\n')
	if end < 0 {
		return len(p), nil
	}
	if err := w.emit(w.line[:end+1]); err != nil {
		return 0, err
	}
	w.line = append(w.line[:0], w.line[end+1:]...)
	return len(p), nil
}

// Flush passes on the line held back, masked, then flushes the wrapped
// writer when it holds lines back too.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		err := w.emit(w.line)
		w.line = w.line[:0]
		if err != nil {
			return err
		}
	}
	if f, ok := w.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// Unwrap returns the writer w passes on to (a terminal, say).
func (w *Writer) Unwrap() io.Writer { return w.w }

func (w *Writer) emit(text []byte) error {
	_, err := io.WriteString(w.w, w.m.Mask(string(text)))
	return err
}
