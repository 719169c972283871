package render

import (
	"fmt"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// kustomize keeps global state (the OpenAPI schema) and is not safe for
// concurrent builds, so builds take turns.
var (
	buildMu sync.Mutex
	// schemaDirty is set after a build whose kustomizations changed the
	// global OpenAPI schema (the openapi: field), so the next build starts
	// from the built-in schema again. Builds that leave it alone keep the
	// parsed schema: parsing it anew costs more than the build itself.
	schemaDirty bool
)

// kustomizeBuild runs krusty on dir with plugins off and files loadable
// from anywhere under the filesystem's root (Flux's load restrictions);
// a kustomize panic comes back as an error.
func kustomizeBuild(fs *repoFS, dir string) (rm resmap.ResMap, err error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if schemaDirty {
		openapi.ResetOpenAPI()
		schemaDirty = false
	}
	defer func() {
		if fs.customSchema() {
			schemaDirty = true
		}
		if r := recover(); r != nil {
			schemaDirty = true
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		// The kustomize CLI's order: sortOptions when the kustomization
		// sets them, otherwise the legacy order (Namespaces and CRDs first).
		Reorder:          krusty.ReorderOptionUnspecified,
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	return k.Run(fs, dir)
}
