package actions

import (
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// fileRef finds the file (and line) an error message is about:
// "apps/stage/secret.yaml:12: ...", "ferry.yaml: line 3: ...".
var fileRef = regexp.MustCompile(`(?:^|[\s"'(])((?:[\w.@+-]+/)*[\w.@+-]+\.(?:ya?ml|json|env))(?::(\d+)|: line (\d+))?`)

// FileError is an error about one file of the repository, which it names
// relative to the repository root.
type FileError interface {
	error
	FilePath() string
}

// ErrorAnnotation places err on the file it is about (a FileError's file,
// else the first file and line its message names), relative to the
// workspace: a path relative to the repository is joined to repo, the
// step's --repo.
func (r *Runtime) ErrorAnnotation(err error, title, repo string) Annotation {
	a := Annotation{Title: title}
	if fe, ok := errors.AsType[FileError](err); ok {
		a.File = fe.FilePath()
	} else {
		m := fileRef.FindStringSubmatch(err.Error())
		if m == nil {
			return a
		}
		a.File = m[1]
		for _, n := range m[2:] {
			if l, err := strconv.Atoi(n); err == nil {
				a.Line = l
			}
		}
	}
	if filepath.IsAbs(a.File) {
		a.File = r.inWorkspace(a.File)
		return a
	}
	if filepath.IsAbs(repo) {
		repo = r.inWorkspace(repo)
	}
	if repo != "" && repo != "." && !filepath.IsAbs(repo) {
		a.File = filepath.ToSlash(filepath.Join(repo, a.File))
	}
	return a
}

// inWorkspace returns path relative to GITHUB_WORKSPACE when it lies
// below it, else path as it is.
func (r *Runtime) inWorkspace(path string) string {
	if ws := r.getenv("GITHUB_WORKSPACE"); ws != "" {
		if rel, err := filepath.Rel(ws, path); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return path
}
