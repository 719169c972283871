package release

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOMName is the CycloneDX SBOM of a platform's binary.
func SBOMName(version string, p Platform) string {
	return "ferry_" + version + "_" + p.OS + "_" + p.Arch + ".cdx.json"
}

// binaryBOM describes a built binary: ferry as the application, and every
// Go module linked into it (read back from the binary's own build
// information, so the list is what was linked, not what go.mod names),
// with the module's go.sum hash.
func binaryBOM(src Source, b Binary, sum File) (*cdx.BOM, error) {
	info, err := buildinfo.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", b.Path, err)
	}
	app := cdx.Component{
		BOMRef:     "pkg:golang/" + info.Main.Path + "@" + src.Version,
		Type:       cdx.ComponentTypeApplication,
		Name:       "ferry",
		Version:    src.Version,
		PackageURL: "pkg:golang/" + info.Main.Path + "@" + src.Version + "?goos=" + b.Platform.OS + "&goarch=" + b.Platform.Arch,
		Licenses:   &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}},
		Properties: &[]cdx.Property{
			{Name: "go:version", Value: info.GoVersion},
			{Name: "go:platform", Value: b.Platform.String()},
			{Name: "vcs:revision", Value: src.Commit},
		},
	}
	if sum.SHA256 != "" {
		app.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum.SHA256}}
	}
	bom := newBOM(src, app)
	refs := make([]string, 0, len(info.Deps))
	comps := make([]cdx.Component, 0, len(info.Deps))
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		c := cdx.Component{
			BOMRef:     "pkg:golang/" + d.Path + "@" + d.Version,
			Type:       cdx.ComponentTypeLibrary,
			Name:       d.Path,
			Version:    d.Version,
			PackageURL: "pkg:golang/" + d.Path + "@" + d.Version + "?type=module",
		}
		if h, ok := moduleHash(d.Sum); ok {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: h}}
		}
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: app.BOMRef, Dependencies: &refs}}
	return bom, nil
}

// moduleHash turns a go.sum hash ("h1:" and base64 of a SHA-256) into
// hex, as CycloneDX writes hashes.
func moduleHash(sum string) (string, bool) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return "", false
	}
	return hex.EncodeToString(raw), true
}

func newBOM(src Source, subject cdx.Component) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: src.Time.Format(time.RFC3339),
		Component: &subject,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "ferry-release", Version: src.Version,
		}}},
	}
	return bom
}

// writeBOM writes bom as JSON into dist/name.
func writeBOM(dist, name string, bom *cdx.BOM) error {
	f, err := os.Create(filepath.Join(dist, name))
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true)
	err = enc.Encode(bom)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// WriteBinarySBOM writes the SBOM of a binary (SBOMName) into dist.
func WriteBinarySBOM(dist string, src Source, b Binary) (File, error) {
	sum, err := hashFile(filepath.Dir(b.Path), filepath.Base(b.Path), "")
	if err != nil {
		return File{}, err
	}
	bom, err := binaryBOM(src, b, sum)
	if err != nil {
		return File{}, err
	}
	name := SBOMName(src.Version, b.Platform)
	if err := writeBOM(dist, name, bom); err != nil {
		return File{}, err
	}
	return hashFile(dist, name, b.Platform.String())
}
