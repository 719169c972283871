package benchkit

import (
	"os"
	"path/filepath"
	"strings"
)

// File is one file of a generated target.
type File struct{ Name, Content string }

// WriteTarget writes a repository of one target, named target, at app/:
// ferry.yaml, the files, and a kustomization listing them in order.
func WriteTarget(dir, target string, files []File) error {
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ferry.yaml"), []byte("targets:\n  - name: "+target+"\n    path: app\n"), 0o644); err != nil {
		return err
	}
	var resources []string
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(app, f.Name), []byte(f.Content), 0o644); err != nil {
			return err
		}
		resources = append(resources, f.Name)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.Join(resources, "\n  - ") + "\n"
	return os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte(k), 0o644)
}
