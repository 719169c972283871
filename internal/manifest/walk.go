package manifest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WalkYAML calls fn with the content of every regular .yaml and .yml file
// under root, by slash path relative to root, in lexical order. Hidden
// folders (.git and the like) are not walked. An error from fn stops the
// walk and is returned.
func WalkYAML(root string, fn func(rel string, data []byte) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), data)
	})
}
