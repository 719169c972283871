package kube

import (
	"errors"
	"fmt"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// renderedSchemas holds, per group/version/kind, the OpenAPI validators of
// the CRDs in a render: custom resources whose CRD this run creates cannot
// be dry-run before it exists, so they are checked against it here.
type renderedSchemas map[schema.GroupVersionKind]validation.SchemaValidator

func schemasOf(objs []*object) (renderedSchemas, error) {
	out := renderedSchemas{}
	for _, o := range objs {
		if !manifest.IsCRD(o.u) {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.u.Object, crd); err != nil {
			return nil, &ObjectError{ID: o.id, Err: err}
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, &ObjectError{ID: o.id, Err: fmt.Errorf("version %s: %w", v.Name, err)}
			}
			validator, _, err := validation.NewSchemaValidator(internal)
			if err != nil {
				return nil, &ObjectError{ID: o.id, Err: fmt.Errorf("version %s: schema: %w", v.Name, err)}
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = validator
		}
	}
	return out, nil
}

// validate checks custom resources of rendered CRDs against their schema.
func (s renderedSchemas) validate(objs []*object) error {
	var errs []error
	for _, o := range objs {
		if o.mapping != nil {
			continue // the cluster knows the kind: the dry-run checks it
		}
		v, ok := s[o.u.GroupVersionKind()]
		if !ok {
			continue
		}
		content := runtime.DeepCopyJSON(o.u.Object)
		unstructured.RemoveNestedField(content, "metadata")
		if list := validation.ValidateCustomResource(field.NewPath(""), content, v); len(list) > 0 {
			errs = append(errs, &ObjectError{ID: o.id, Err: fmt.Errorf("invalid against its CRD's schema: %w", list.ToAggregate())})
		}
	}
	return errors.Join(errs...)
}
