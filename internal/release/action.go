package release

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// dockerfileImage is the runs.image line of ferry's container actions on
// the main branch: the runner builds the Dockerfile.
var dockerfileImage = regexp.MustCompile(`(?m)^([ \t]*image:[ \t]*)["']?(\.\./\.\./)?Dockerfile["']?[ \t]*$`)

// ActionDirs are the folders of ferry's actions besides the root's
// action.yml: every file under them belongs to the release commit.
var ActionDirs = []string{"steps", "setup"}

// PinActions copies the action files of root (action.yml and every file
// under ActionDirs) into out, the files of the release commit, with each
// container action's image changed from the Dockerfile to image (a
// docker:// reference with the index's digest), so that a workflow using
// the release runs the published image and builds nothing. Every
// action.yml must be either such a container action or a composite one.
func PinActions(root, out, image string) ([]string, error) {
	var files []string
	files = append(files, "action.yml")
	for _, dir := range ActionDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		if filepath.Base(rel) == "action.yml" {
			b, err = pin(rel, b, image)
			if err != nil {
				return nil, err
			}
		}
		dst := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := writeLike(dst, b, filepath.Join(root, rel)); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// pin rewrites one action.yml.
func pin(rel string, b []byte, image string) ([]byte, error) {
	switch {
	case dockerfileImage.Match(b):
		return dockerfileImage.ReplaceAll(b, []byte("${1}docker://"+image)), nil
	case regexp.MustCompile(`(?m)^\s*using:\s*["']?composite["']?\s*$`).Match(b):
		return b, nil
	case strings.Contains(string(b), "image:"):
		return nil, fmt.Errorf("%s: its runs.image is neither the Dockerfile nor pinned by this release; a release must not carry it", rel)
	default:
		return nil, fmt.Errorf("%s: neither a container action building the Dockerfile nor a composite action", rel)
	}
}

// writeLike writes b to dst with the mode of the file src (a script
// stays executable in the release commit).
func writeLike(dst string, b []byte, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm())
}
