package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Provenance is a SLSA v1 provenance predicate
// (https://slsa.dev/spec/v1.0/provenance): what was built from which
// commit, by which builder, with which parameters.
type Provenance struct {
	BuildDefinition struct {
		BuildType            string         `json:"buildType"`
		ExternalParameters   map[string]any `json:"externalParameters"`
		InternalParameters   map[string]any `json:"internalParameters,omitempty"`
		ResolvedDependencies []Descriptor   `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			InvocationID string `json:"invocationId,omitempty"`
			StartedOn    string `json:"startedOn"`
			FinishedOn   string `json:"finishedOn"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

// Descriptor is a SLSA resource descriptor.
type Descriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest"`
}

// BuildType names how ferry-release builds: its parameters are those of
// ExternalParameters.
const BuildType = "https://github.com/ferry-ci/ferry/blob/main/docs/releasing.md#build-type-v1"

// Builder identifies who ran the build: the workflow run in Actions
// (GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_WORKFLOW_REF, GITHUB_RUN_ID
// of getenv), else the local machine's ferry-release.
type Builder struct {
	ID, InvocationID string
}

// BuilderFromEnv reads the builder of an Actions run from its variables.
func BuilderFromEnv(getenv func(string) string) Builder {
	server, repo, ref := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_WORKFLOW_REF")
	if server == "" || repo == "" {
		return Builder{ID: "local:ferry-release"}
	}
	b := Builder{ID: server + "/" + repo + "/.github/workflows"}
	if ref != "" {
		b.ID = server + "/" + ref
	}
	if run := getenv("GITHUB_RUN_ID"); run != "" {
		b.InvocationID = server + "/" + repo + "/actions/runs/" + run + "/attempts/" + getenv("GITHUB_RUN_ATTEMPT")
	}
	return b
}

// WriteProvenance writes the predicate of this release into dist/name.
func WriteProvenance(dist, name string, src Source, o Options, goVersion string, started, finished time.Time) (string, error) {
	var p Provenance
	p.BuildDefinition.BuildType = BuildType
	platforms := make([]string, len(o.Platforms))
	for i, pl := range o.Platforms {
		platforms[i] = pl.String()
	}
	p.BuildDefinition.ExternalParameters = map[string]any{
		"source": o.SourceURL, "version": src.Version, "platforms": platforms, "registry": o.Registry,
	}
	p.BuildDefinition.InternalParameters = map[string]any{"goVersion": goVersion, "cgo": false, "trimpath": true}
	p.BuildDefinition.ResolvedDependencies = []Descriptor{{
		URI:    "git+" + o.SourceURL + "@" + src.Version,
		Digest: map[string]string{"gitCommit": src.Commit},
	}}
	p.RunDetails.Builder.ID = o.Builder.ID
	p.RunDetails.Metadata.InvocationID = o.Builder.InvocationID
	p.RunDetails.Metadata.StartedOn = started.UTC().Format(time.RFC3339)
	p.RunDetails.Metadata.FinishedOn = finished.UTC().Format(time.RFC3339)
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dist, name)
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}
