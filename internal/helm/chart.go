package helm

import (
	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/ocisig"
)

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

// Credentials authenticate to a chart source, and are sent to one
// origin only.
type Credentials struct {
	// Origin is the scheme://host:port (default port written out, as
	// origin.Of gives it) the credentials are bound to: every request to
	// it carries them, and no other does (a redirect to another host,
	// port or scheme; an archive an index lists elsewhere; a blob a
	// registry sends to a CDN). Credentials without an Origin are sent
	// nowhere. ChartSource.Origin is the origin a source is reached at.
	Origin             string
	Username, Password string
}

// key tells credentials apart in cache keys: what was fetched with them
// is not handed to a source without them (or with others). It holds no
// password.
func (c *Credentials) key() string {
	if c == nil {
		return ""
	}
	return c.Origin + " " + c.Username
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
	// Withheld, when set, says why the source has no Credentials though
	// it names some (its URL is not trusted with them); a refusal of
	// access says so.
	Withheld string
	// Verify, when set, is the cosign policy an OCIRepository's
	// spec.verify asks of the artifact: a chart whose signatures fail it
	// is not read (ErrUnverified).
	Verify *ocisig.Policy
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

// SourceVerify is a Flux source's spec.verify, as an OCIRepository, a
// HelmChart and a HelmRelease's chart template spell it: the provider
// (cosign when empty), the Secret of trusted public keys, and the
// keyless identities allowed.
type SourceVerify struct {
	Provider  string `json:"provider"`
	SecretRef *struct {
		Name string `json:"name"`
	} `json:"secretRef"`
	MatchOIDCIdentity []struct {
		Issuer  string `json:"issuer"`
		Subject string `json:"subject"`
	} `json:"matchOIDCIdentity"`
}
