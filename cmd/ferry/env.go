package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ferry-ci/ferry/internal/helm"
	"github.com/ferry-ci/ferry/internal/output"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// env is everything a command reads from outside its flags: the streams,
// and the environment read once (runenv.Env), passed down.
type env struct {
	// stdout and stderr mask every secret the masker knows once run has
	// started (runenv.Env.Streams): the only streams a command gets.
	stdout io.Writer
	stderr io.Writer
	// manifests is the standard output for the one output that shows
	// decrypted values by design, render's manifests: it masks ferry's
	// own credentials only.
	manifests io.Writer
	// getenv and environ read the variables (os.Getenv, os.Environ; nil
	// environ lists nothing): runWith reads them into Env.
	getenv  func(string) string
	environ func() []string
	// sandbox renders the run's charts in a child process (ferry itself,
	// helm.SandboxArg); nil renders them in this process (tests that run
	// the commands in-process).
	sandbox *helm.Sandbox

	// Env is the run's environment, from runWith on.
	*runenv.Env
	// actionRepo is the step's --repo, for error annotations.
	actionRepo string
}

func newEnv() *env {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ,
		sandbox: helm.NewSandbox(exe, helm.SandboxArg)}
}

// flushStreams writes out what the streams hold back: the end of a line
// not ended yet.
func (e *env) flushStreams() {
	for _, w := range []io.Writer{e.manifests, e.stdout, e.stderr} {
		if f, ok := w.(interface{ Flush() error }); ok {
			_ = f.Flush()
		}
	}
}

// print writes res in format to stdout (output.Result), masked as a
// whole, so a secret that spans lines is caught too, before the stream
// masks it again line by line.
func (e *env) print(res output.Result, format string) error {
	var b strings.Builder
	if err := res.Write(&b, output.Format(format)); err != nil {
		return err
	}
	_, err := io.WriteString(e.stdout, e.Masker.Mask(b.String()))
	return err
}

// warnings prints each of ws, masked, as a warning on stderr.
func (e *env) warnings(ws []string) {
	for _, w := range ws {
		fmt.Fprintln(e.stderr, "ferry: warning: "+e.Masker.Mask(w))
	}
}

// warn prints msg, masked, as a warning on stderr, and inside a step as
// a warning annotation titled title.
func (e *env) warn(title, msg string) {
	msg = e.Masker.Mask(msg)
	fmt.Fprintln(e.stderr, "ferry: warning: "+msg)
	e.Warn(title, msg)
}
