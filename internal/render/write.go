package render

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-ci/ferry/internal/confine"
	"github.com/ferry-ci/ferry/internal/manifest"
)

// WriteFiles writes one file per object of the results under
// out/<target>/, Secrets readable by the owner only. Every write stays
// below out, goes through no symlink and replaces a file rather than
// writing through it: a link committed at rendered/app/secret_db.yaml
// would otherwise send a decrypted Secret wherever it points.
func WriteFiles(out *confine.Dir, results []*Result) error {
	for _, res := range results {
		for _, o := range res.Set.Objects {
			b, err := manifest.YAML(o)
			if err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if o.GetKind() == "Secret" {
				mode = 0o600
			}
			if err := out.WriteFile(filepath.Join(filepath.FromSlash(res.Name), manifest.FileName(o)), b, mode); err != nil {
				return fmt.Errorf("target %q: %w", res.Name, err)
			}
		}
	}
	return nil
}

// YAML is one YAML stream of every object of the results, in order.
func YAML(results []*Result) ([]byte, error) {
	var all manifest.Set
	for _, res := range results {
		all.Objects = append(all.Objects, res.Set.Objects...)
	}
	return all.YAML()
}
