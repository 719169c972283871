package resourceset

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// spec is the part of a ResourceSet's spec that decides what it generates.
type spec struct {
	Inputs            []map[string]any `json:"inputs,omitempty"`
	InputsFrom        []inputsFrom     `json:"inputsFrom,omitempty"`
	InputStrategy     *inputStrategy   `json:"inputStrategy,omitempty"`
	Resources         []map[string]any `json:"resources,omitempty"`
	ResourcesTemplate string           `json:"resourcesTemplate,omitempty"`
	Steps             []step           `json:"steps,omitempty"`
	CommonMetadata    *struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"commonMetadata,omitempty"`
}

// inputsFrom is one spec.inputsFrom entry: a provider by name, or the
// providers a label selector matches.
type inputsFrom struct {
	APIVersion string                `json:"apiVersion,omitempty"`
	Kind       string                `json:"kind,omitempty"`
	Name       string                `json:"name,omitempty"`
	Selector   *metav1.LabelSelector `json:"selector,omitempty"`
}

type inputStrategy struct {
	Name                  string `json:"name,omitempty"`
	IncludeEmptyProviders bool   `json:"includeEmptyProviders,omitempty"`
}

type step struct {
	Name              string           `json:"name"`
	Resources         []map[string]any `json:"resources,omitempty"`
	ResourcesTemplate string           `json:"resourcesTemplate,omitempty"`
}

// parseSpec reads the spec of a ResourceSet object. Numbers keep the
// types the API machinery gives them: int64 for integers, else float64.
func parseSpec(obj map[string]any) (*spec, error) {
	raw, ok := obj["spec"]
	if !ok {
		return nil, fmt.Errorf("no spec")
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	var s spec
	if err := utiljson.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading spec: %w", err)
	}
	return &s, s.validate()
}

// maxSteps is the most steps a ResourceSet may have.
const maxSteps = 20

// validate checks what the API server's schema would have refused.
func (s *spec) validate() error {
	if len(s.Steps) > 0 && (len(s.Resources) > 0 || s.ResourcesTemplate != "") {
		return fmt.Errorf("spec.steps cannot be set with spec.resources or spec.resourcesTemplate")
	}
	for i, f := range s.InputsFrom {
		if (f.Name == "") == (f.Selector == nil) {
			return fmt.Errorf("spec.inputsFrom[%d]: exactly one of name and selector must be set", i)
		}
		if f.APIVersion != "" && f.APIVersion != APIVersion {
			return fmt.Errorf("spec.inputsFrom[%d]: apiVersion %q is not %s", i, f.APIVersion, APIVersion)
		}
		if f.Kind != "" && f.Kind != ProviderKind {
			return fmt.Errorf("spec.inputsFrom[%d]: kind %q is not %s", i, f.Kind, ProviderKind)
		}
	}
	if s.InputStrategy != nil {
		switch s.InputStrategy.Name {
		case "", Flatten, Permute:
		default:
			return fmt.Errorf("spec.inputStrategy.name %q is not one of %s, %s", s.InputStrategy.Name, Flatten, Permute)
		}
	}
	if len(s.Steps) > maxSteps {
		return fmt.Errorf("spec.steps: %d steps, more than the %d allowed", len(s.Steps), maxSteps)
	}
	seen := map[string]bool{}
	for i, st := range s.Steps {
		if st.Name == "" {
			return fmt.Errorf("spec.steps[%d]: no name", i)
		}
		if seen[st.Name] {
			return fmt.Errorf("spec.steps[%d]: step name %q is used twice", i, st.Name)
		}
		seen[st.Name] = true
		if len(st.Resources) == 0 && st.ResourcesTemplate == "" {
			return fmt.Errorf("spec.steps[%d] (%s): neither resources nor resourcesTemplate is set", i, st.Name)
		}
	}
	return nil
}

// strategy is the input strategy's name, Flatten when unset.
func (s *spec) strategy() string {
	if s.InputStrategy == nil || s.InputStrategy.Name == "" {
		return Flatten
	}
	return s.InputStrategy.Name
}
