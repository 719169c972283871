package manifest

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// WalkYAML calls fn with the content of every regular .yaml and .yml file
// under root, by slash path relative to root, in lexical order. Hidden
// folders (.git and the like) are not walked. A file past MaxFileSize or
// an alias bomb stops the walk with a LimitError; so does an error from fn.
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
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := ReadFile(path, rel)
		if err != nil {
			return err
		}
		if err := CheckAliases(rel, data); err != nil {
			return err
		}
		return fn(rel, data)
	})
}
