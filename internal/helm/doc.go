// Package helm renders Flux HelmReleases offline with Helm v4's library:
// it resolves each release's chart from its source (an HTTP or OCI chart
// repository, an OCIRepository, or a folder of the Git checkout) through a
// content-addressed cache, composes its values in Flux's order, and renders
// the chart's objects, hooks and CRDs as helm-controller would install them,
// under budgets, in a child process (Sandbox) that a runaway chart cannot
// outlive.
package helm
