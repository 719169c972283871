// Package confine writes files below one folder and nowhere else: a path
// that would leave the folder, or that runs through a symlink (one a
// repository committed, say), is refused, so neither names nor links from
// a repository can steer where ferry writes. A path the user names is
// trusted up to the working directory (OpenNamed, WriteNamed).
package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a folder that writes are confined to.
type Dir struct {
	root *os.Root
	// made are the folders MkdirAll found or made below root, real
	// folders (never symlinks), for Create. A folder is never replaced
	// by anything else through a Dir.
	made map[string]bool
}

// Open opens the folder path, which must exist. path itself is the
// caller's to trust; what is below it is checked on every write.
func Open(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r}, nil
}

// Close closes the folder.
func (d *Dir) Close() error { return d.root.Close() }

// path names rel for an error: below the folder as it was opened.
func (d *Dir) path(rel string) string { return filepath.Join(d.root.Name(), rel) }

// parts splits rel, a relative path, and refuses one that is absolute,
// empty, or has an empty, "." or ".." element.
func (d *Dir) parts(rel string) ([]string, error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%q: not a plain path below %s (it has an empty, . or .. element, or is absolute)", rel, d.root.Name())
		}
	}
	return parts, nil
}

// MkdirAll creates the folder rel below d, with the folders above it that
// are missing (with perm), and refuses when one that exists is a symlink
// or not a folder. rel "." is d itself.
func (d *Dir) MkdirAll(rel string, perm fs.FileMode) error {
	if rel == "." {
		return nil
	}
	parts, err := d.parts(rel)
	if err != nil {
		return err
	}
	cur := ""
	for _, p := range parts {
		cur = filepath.Join(cur, p)
		if d.made[cur] {
			continue
		}
		fi, err := d.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err := d.root.Mkdir(cur, perm); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			fi, err = d.root.Lstat(cur)
		}
		if err != nil {
			return err
		}
		if err := isFolder(d.path(cur), fi); err != nil {
			return err
		}
		if d.made == nil {
			d.made = map[string]bool{}
		}
		d.made[cur] = true
	}
	return nil
}

func isFolder(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink: ferry does not write through links it did not make", path)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder", path)
	}
	return nil
}

// Sub creates the folder rel below d as MkdirAll does and opens it.
func (d *Dir) Sub(rel string, perm fs.FileMode) (*Dir, error) {
	if err := d.MkdirAll(rel, perm); err != nil {
		return nil, err
	}
	r, err := d.root.OpenRoot(rel)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r}, nil
}

// WriteFile writes data to the file rel below d, with mode perm exactly,
// creating the folders above it as MkdirAll does. An existing file is
// replaced, never written through: the data goes to a new file in the same
// folder, renamed over it. An existing symlink or folder at rel is
// refused.
func (d *Dir) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	rel, err := d.entry(rel)
	if err != nil {
		return err
	}
	if err := d.replaceable(rel); err != nil {
		return err
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".ferry-"+hex.EncodeToString(b))
	err = d.create(tmp, data, perm)
	if err == nil {
		err = d.root.Rename(tmp, rel)
	}
	if err != nil {
		_ = d.root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", d.path(rel), err)
	}
	return nil
}

// Create writes data to a new file rel below d, with mode perm exactly,
// creating the folders above it as MkdirAll does; anything already at
// rel (a file, a folder, a symlink) is refused. It is WriteFile for
// filling a folder that starts empty (an export of a Git tree): nothing
// is replaced, so no temporary file is needed.
func (d *Dir) Create(rel string, data []byte, perm fs.FileMode) error {
	rel, err := d.entry(rel)
	if err != nil {
		return err
	}
	if err := d.create(rel, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", d.path(rel), err)
	}
	return nil
}

// create writes data to the new file rel (which must not exist), mode
// perm exactly; a file it could not write whole is removed.
func (d *Dir) create(rel string, data []byte, perm fs.FileMode) error {
	f, err := d.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have taken bits away
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = d.root.Remove(rel)
	}
	return err
}

// entry checks rel as parts does, creates the folders above it as
// MkdirAll does, and returns it cleaned, for a new entry to be made.
func (d *Dir) entry(rel string) (string, error) {
	parts, err := d.parts(rel)
	if err != nil {
		return "", err
	}
	if dir := filepath.Join(parts[:len(parts)-1]...); dir != "" {
		if err := d.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	return filepath.Join(parts...), nil
}

// replaceable refuses a symlink or a folder at rel.
func (d *Dir) replaceable(rel string) error {
	fi, err := d.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink: ferry does not write through links it did not make", d.path(rel))
	case fi.IsDir():
		return fmt.Errorf("%s is a folder, not a file", d.path(rel))
	}
	return nil
}

// Symlink makes rel below d a symlink to target, creating the folders
// above it as MkdirAll does. target is not followed or checked; nothing
// in this package writes through the link. An existing rel is refused.
func (d *Dir) Symlink(target, rel string) error {
	rel, err := d.entry(rel)
	if err != nil {
		return err
	}
	if err := d.root.Symlink(target, rel); err != nil {
		return fmt.Errorf("linking %s: %w", d.path(rel), err)
	}
	return nil
}
