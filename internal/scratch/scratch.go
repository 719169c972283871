// Package scratch makes the private folders ferry writes whole trees
// into for the length of a run: a revision exported from Git for a diff,
// another ref's tree, an artifact's files. Nothing in them needs a disk,
// and on a runner's disk a fleet's few hundred small files cost more to
// create and remove than to render (about 0.3 s of a one-line diff of an
// 80-app fleet, measured in bench/prdiff.sh), so they go to memory when
// the machine has a memory file system: Linux's /dev/shm when it is a
// tmpfs with room. TMPDIR, when set, is obeyed as os.TempDir obeys it:
// the user chose where temporary files go.
//
// A tree too large for memory is not a failure: a fill that runs out of
// room there is made again in os.TempDir.
package scratch

import (
	"errors"
	"os"
	"syscall"
)

// Fill makes a new private folder named by pattern (os.MkdirTemp's) and
// calls fill with it. It returns the folder, for the caller to remove
// (os.RemoveAll) when done. When fill fails the folder is removed and the
// error returned; when it failed for room in memory, it is made again in
// os.TempDir.
func Fill(pattern string, fill func(dir string) error) (string, error) {
	return place{memory: memoryDir()}.fill(pattern, fill)
}

// full reports whether err says a file system had no room left (or the
// user's quota on it).
func full(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// place is where folders are made: in memory first when memory is set.
type place struct{ memory string }

func (p place) fill(pattern string, fill func(string) error) (string, error) {
	if p.memory != "" {
		d, err := os.MkdirTemp(p.memory, pattern)
		if err == nil {
			err = fill(d)
			if err == nil {
				return d, nil
			}
			_ = os.RemoveAll(d)
			if !full(err) {
				return "", err
			}
		}
	}
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := fill(d); err != nil {
		_ = os.RemoveAll(d)
		return "", err
	}
	return d, nil
}
