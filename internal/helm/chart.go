package helm

import "github.com/ferry-ci/ferry/internal/budget"

// This file is the contract between the two halves of the package: the
// chart sources (source*.go, cache*.go) resolve and fetch a chart, and the
// release side (release*.go, values*.go, render*.go) loads and renders it.

// SourceKind is what a chart is fetched from.
type SourceKind string

const (
	// HTTPRepository is a classic chart repository: index.yaml and .tgz
	// archives over HTTP(S) (a HelmRepository of type default).
	HTTPRepository SourceKind = "http"
	// OCIRepository is an OCI registry holding charts as artifacts (a
	// HelmRepository of type oci, or an OCIRepository's chart layer).
	OCIRepository SourceKind = "oci"
	// Folder is a chart folder in the Git checkout (a GitRepository
	// source), relative to the repository root.
	Folder SourceKind = "folder"
)

// Credentials authenticate to a chart source.
type Credentials struct {
	Username, Password string
}

// ChartSource says where one chart comes from and which version is wanted.
type ChartSource struct {
	Kind SourceKind
	// URL is the repository URL (https://charts.example.com,
	// oci://registry.example.com/charts) for HTTPRepository and
	// OCIRepository; for an OCIRepository object's URL it is the full
	// artifact reference without tag (oci://host/path/chart).
	URL string
	// Chart is the chart name in the repository (empty for an
	// OCIRepository object, whose URL names the artifact).
	Chart string
	// Version is an exact version or a semver range ("*" or "" for the
	// newest); for OCI it may also be a tag. Digest, when set, pins an
	// OCI artifact (sha256:...).
	Version string
	Digest  string
	// Root and Path locate a Folder chart: Path relative to the Git
	// checkout at Root. A Path that escapes Root is an error.
	Root, Path string
	// Credentials, nil for anonymous access. Insecure allows plain HTTP
	// (a host named on purpose).
	Credentials *Credentials
	Insecure    bool
	// Limits bound what the chart may unpack to (chartFiles, chartSize);
	// zero fields are the defaults.
	Limits budget.Limits
}

// Fetched is a resolved, fetched chart: its name and version as the
// chart's metadata gives them, the digest of its archive (sha256:<hex>),
// and the archive itself (a .tgz) or, for a Folder, the folder's absolute
// path.
type Fetched struct {
	Name, Version string
	Digest        string
	Archive       []byte
	Dir           string
}
