package actions

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MaxSummary is the most a step summary may hold: GitHub refuses to show a
// larger one (and says so in the log instead).
const MaxSummary = 1 << 20

// SetOutput appends the step output name=value to the file GITHUB_OUTPUT
// names. Every value is written in the heredoc form with a random
// delimiter that the value does not contain, so a multi-line value (or one
// that contains a line such as "other=value") cannot forge other outputs.
func (r *Runtime) SetOutput(name, value string) error {
	if name == "" || strings.ContainsAny(name, "\r\n=") || strings.Contains(name, "<<") {
		return fmt.Errorf("step output name %q: want a plain name", name)
	}
	value = r.redact(value)
	delim, err := delimiter(value)
	if err != nil {
		return err
	}
	return r.appendFile("GITHUB_OUTPUT", name+"<<"+delim+"\n"+value+"\n"+delim+"\n")
}

// AddSummary appends markdown to the step summary (GITHUB_STEP_SUMMARY). What
// would take this process's share past MaxSummary is cut, with a note.
func (r *Runtime) AddSummary(markdown string) error {
	markdown = r.redact(markdown)
	if !strings.HasSuffix(markdown, "\n") {
		markdown += "\n"
	}
	r.mu.Lock()
	room := MaxSummary - r.summaryBytes
	r.mu.Unlock()
	if len(markdown) > room {
		const note = "\n\n_(the rest was cut: a step summary holds at most 1 MiB)_\n"
		cut := room - len(note)
		if cut <= 0 {
			return nil
		}
		for cut > 0 && !utf8Start(markdown[cut]) {
			cut--
		}
		markdown = markdown[:cut] + note
	}
	if err := r.appendFile("GITHUB_STEP_SUMMARY", markdown); err != nil {
		return err
	}
	r.mu.Lock()
	r.summaryBytes += len(markdown)
	r.mu.Unlock()
	return nil
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// appendFile appends text to the file-command file the variable names.
func (r *Runtime) appendFile(variable, text string) error {
	path := r.getenv(variable)
	if path == "" {
		return fmt.Errorf("%s is not set: the runner gave this step no file to write to", variable)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", variable, err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", variable, err)
	}
	return nil
}

// delimiter returns a heredoc delimiter that does not occur in value.
func delimiter(value string) (string, error) {
	for range 8 {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		d := "ghadelimiter_" + hex.EncodeToString(b)
		if !strings.Contains(value, d) {
			return d, nil
		}
	}
	return "", errors.New("no heredoc delimiter found that the output value does not contain")
}
