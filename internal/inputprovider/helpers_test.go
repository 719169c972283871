package inputprovider_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ferry-ci/ferry/internal/resourceset"
)

// provider reads a ResourceSetInputProvider from YAML.
func provider(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// wantSkip fails unless err is a SkipError whose reason holds want.
func wantSkip(t *testing.T, err error, want string) {
	t.Helper()
	var skip *resourceset.SkipError
	if !errors.As(err, &skip) {
		t.Fatalf("error %v, want a SkipError", err)
	}
	if !strings.Contains(skip.Reason, want) {
		t.Errorf("reason %q, want it to say %q", skip.Reason, want)
	}
}
