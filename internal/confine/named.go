package confine

import (
	"os"
	"path/filepath"
)

// OpenNamed creates and opens the folder path, which the user named, for
// writing into. The part of path below the working directory (in CI, the
// checkout, where a pull request can commit symlinks) must hold no
// symlink; a path outside the working directory is the workflow's own, so
// only its last element is checked.
func OpenNamed(path string) (*Dir, error) {
	base, rel, err := trustedBase(path)
	if err != nil {
		return nil, err
	}
	top, err := Open(base)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.Sub(rel, 0o755)
}

// WriteNamed writes data to the file path, which the user named, with the
// same checks as OpenNamed, replacing the file rather than writing
// through it.
func WriteNamed(path string, data []byte, perm os.FileMode) error {
	base, rel, err := trustedBase(path)
	if err != nil {
		return err
	}
	top, err := Open(base)
	if err != nil {
		return err
	}
	defer top.Close()
	return top.WriteFile(rel, data, perm)
}

// trustedBase splits a path the user named into the folder taken as given
// and the rest, relative to it: the working directory and the part below
// it, or, for a path outside the working directory, its parent folder
// (created if missing) and its last element.
func trustedBase(path string) (base, rel string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	if r, err := filepath.Rel(wd, abs); err == nil && filepath.IsLocal(r) {
		return wd, r, nil
	}
	if abs == wd {
		return wd, ".", nil
	}
	base = filepath.Dir(abs)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", err
	}
	return base, filepath.Base(abs), nil
}
