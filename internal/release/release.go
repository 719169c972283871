package release

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Options are a release's inputs.
type Options struct {
	// Root is ferry's checkout; Dist the folder the release is written
	// to (emptied first).
	Root, Dist string
	// Version is the wanted version: a tag at HEAD, or empty (the tag at
	// HEAD, else a snapshot).
	Version string
	// Registry is where the images go (host[:port][/path]), as
	// <Registry>/ferry:<version> and <Registry>/ferry:<version>-action.
	// Required unless NoImages.
	Registry string
	// Insecure lets the registry be plain HTTP (loopback registries are
	// spoken to over plain HTTP anyway).
	Insecure bool
	// NoImages makes the binaries, archives, SBOMs and checksums only.
	NoImages bool
	// Platforms are the binaries built; with images, linux/amd64 and
	// linux/arm64 must be among them.
	Platforms []Platform
	// Go is the go command.
	Go string
	// Cosign signs; nil makes an unsigned release.
	Cosign *Cosign
	// SourceURL is the repository's web address (OCI source annotation,
	// provenance); DownloadURL where the setup action downloads this
	// release's archives from.
	SourceURL, DownloadURL string
	// Builder is who runs the build, for the provenance.
	Builder Builder
	// Keychain gives the registry's credentials.
	Keychain authn.Keychain
	// Progress, if not nil, is told each step as it starts.
	Progress func(string)
}

// ImageRef is a pushed index.
type ImageRef struct {
	// Ref is the tag it was pushed to, Digest the index's digest.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// Pinned is the reference by digest, tag kept for readers:
// <repo>:<tag>@sha256:….
func (r ImageRef) Pinned() string { return r.Ref + "@" + r.Digest }

// Result is a finished release, also written as dist/release.json.
type Result struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	// Tagged is false for a snapshot.
	Tagged bool `json:"tagged"`
	// Images by variant name (image, action).
	Images map[string]ImageRef `json:"images,omitempty"`
	// Files are the release's files in Dist, the checksums file and
	// signature bundles included.
	Files []File `json:"files"`
	// Signed says whether the images and the checksums are signed, and
	// how: "key", "keyless" or "".
	Signed string `json:"signed"`
	// Action is the folder of the release commit's action files.
	Action string `json:"action"`
}

// Run makes a release. Every check that can fail without building
// (the work tree, the version, the registry's reach and rights, the
// signing key's password) runs before anything is built or pushed.
func Run(ctx context.Context, o Options) (*Result, error) {
	started := time.Now()
	src, err := ResolveSource(ctx, o.Root, o.Version)
	if err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	var pub []byte
	if o.Cosign != nil {
		if pub, err = o.Cosign.PublicKey(ctx); err != nil {
			return nil, err
		}
	}
	refs := map[string]name.Tag{}
	if !o.NoImages {
		if refs, err = o.checkRegistry(src); err != nil {
			return nil, err
		}
	}
	o.say("release " + src.Version + " of " + short(src.Commit))
	if err := os.RemoveAll(o.Dist); err != nil {
		return nil, err
	}
	build := filepath.Join(o.Dist, ".build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(build)
	res := &Result{Version: src.Version, Commit: src.Commit, Date: src.Time.Format(time.RFC3339), Tagged: src.Tagged, Images: map[string]ImageRef{}}
	bins, err := o.buildFiles(ctx, src, build, res)
	if err != nil {
		return nil, err
	}
	provenance, err := WriteProvenance(build, "provenance.json", src, o, goVersion(bins), started, time.Now())
	if err != nil {
		return nil, err
	}
	if !o.NoImages {
		imageSBOM, err := o.pushImages(ctx, src, bins, refs, res, provenance)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, imageSBOM)
	}
	if err := o.checksums(ctx, src, res, provenance, pub); err != nil {
		return nil, err
	}
	if err := o.writeAction(src, res, pub); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return res, os.WriteFile(filepath.Join(o.Dist, "release.json"), append(b, '\n'), 0o644)
}

func (o Options) say(s string) {
	if o.Progress != nil {
		o.Progress(s)
	}
}

// buildFiles builds the binaries into build, and their archives and
// SBOMs into Dist (added to res.Files).
func (o Options) buildFiles(ctx context.Context, src Source, build string, res *Result) ([]Binary, error) {
	o.say("building " + platformList(o.Platforms))
	bins, err := Build(ctx, o.Go, o.Root, build, src, o.Platforms)
	if err != nil {
		return nil, err
	}
	for _, b := range bins {
		a, err := Archive(o.Dist, o.Root, src, b)
		if err != nil {
			return nil, err
		}
		s, err := WriteBinarySBOM(o.Dist, src, b)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, a, s)
	}
	return bins, nil
}

// checksums writes the checksums file of res.Files and, when signing,
// its signature bundle, the binaries' provenance (whose subject is the
// checksums file, which names every archive and SBOM by digest) and the
// public key.
func (o Options) checksums(ctx context.Context, src Source, res *Result, provenance string, pub []byte) error {
	sums, err := WriteChecksums(o.Dist, src.Version, res.Files)
	if err != nil {
		return err
	}
	res.Files = append(res.Files, sums)
	if o.Cosign == nil {
		return nil
	}
	res.Signed = "key"
	if o.Cosign.Keyless {
		res.Signed = "keyless"
	}
	o.say("signing " + sums.Name)
	path := filepath.Join(o.Dist, sums.Name)
	bundle, provBundle := sums.Name+".sigstore.json", ProvenanceName(src.Version)
	if err := o.Cosign.SignBlob(ctx, path, filepath.Join(o.Dist, bundle)); err != nil {
		return err
	}
	if err := o.Cosign.AttestBlob(ctx, path, "slsaprovenance1", provenance, filepath.Join(o.Dist, provBundle)); err != nil {
		return err
	}
	for _, name := range []string{bundle, provBundle} {
		f, err := hashFile(o.Dist, name, "")
		if err != nil {
			return err
		}
		res.Files = append(res.Files, f)
	}
	if len(pub) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(o.Dist, "cosign.pub"), pub, 0o644)
}

// check validates the options that need no network.
func (o Options) check() error {
	if o.Dist == "" || filepath.Clean(o.Dist) == filepath.Clean(o.Root) {
		return errors.New("the release folder (--dist) must be set and not the checkout itself")
	}
	if o.NoImages {
		return nil
	}
	if o.Registry == "" {
		return errors.New("no registry: say where the images go with REGISTRY=host:port (make release-local) or --registry, or make binaries only with --no-images")
	}
	if _, err := name.NewRepository(o.Registry + "/ferry"); err != nil {
		return fmt.Errorf("registry %q: %w", o.Registry, err)
	}
	for _, p := range ImagePlatforms {
		if !slices.Contains(o.Platforms, p) {
			return fmt.Errorf("the images need %s among the platforms (%s)", p, platformList(o.Platforms))
		}
	}
	return nil
}

// checkRegistry returns each variant's tag, after checking that the
// registry answers and lets these credentials push there.
func (o Options) checkRegistry(src Source) (map[string]name.Tag, error) {
	var opts []name.Option
	if o.Insecure {
		opts = append(opts, name.Insecure)
	}
	refs := map[string]name.Tag{}
	for _, v := range Variants {
		tag, err := name.NewTag(o.Registry+"/ferry:"+src.Version+v.TagSuffix, opts...)
		if err != nil {
			return nil, fmt.Errorf("image name %s/ferry:%s%s: %w", o.Registry, src.Version, v.TagSuffix, err)
		}
		refs[v.Name] = tag
	}
	if err := remote.CheckPushPermission(refs["image"], o.keychain(), http.DefaultTransport); err != nil {
		return nil, fmt.Errorf("registry %s: cannot push %s: %w", o.Registry, refs["image"].Repository, err)
	}
	return refs, nil
}

func (o Options) keychain() authn.Keychain {
	if o.Keychain != nil {
		return o.Keychain
	}
	return authn.DefaultKeychain
}

// pushImages builds, pushes, signs and attests both variants' indexes,
// and writes the image SBOM (returned).
func (o Options) pushImages(ctx context.Context, src Source, bins []Binary, refs map[string]name.Tag, res *Result, provenance string) (File, error) {
	labels := Labels(src, o.SourceURL)
	for _, v := range Variants {
		idx, err := Images(src, bins, v, labels)
		if err != nil {
			return File{}, err
		}
		ref := refs[v.Name]
		o.say("pushing " + ref.String())
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(o.keychain()), remote.WithContext(ctx)); err != nil {
			return File{}, fmt.Errorf("pushing %s: %w", ref, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return File{}, err
		}
		res.Images[v.Name] = ImageRef{Ref: ref.String(), Digest: digest.String()}
	}
	sbom, err := o.writeImageSBOM(src, bins, res)
	if err != nil {
		return File{}, err
	}
	if o.Cosign == nil {
		return sbom, nil
	}
	for _, v := range Variants {
		ref := res.Images[v.Name].Pinned()
		o.say("signing " + ref)
		if err := o.Cosign.SignImage(ctx, ref); err != nil {
			return File{}, err
		}
		if err := o.Cosign.Attest(ctx, ref, "cyclonedx", filepath.Join(o.Dist, sbom.Name)); err != nil {
			return File{}, err
		}
		if err := o.Cosign.Attest(ctx, ref, "slsaprovenance1", provenance); err != nil {
			return File{}, err
		}
	}
	return sbom, nil
}

// ProvenanceName is the bundle of the binaries' SLSA provenance, whose
// subject is the checksums file.
func ProvenanceName(version string) string { return "ferry_" + version + "_provenance.sigstore.json" }

// ImageSBOMName is the SBOM of the images.
func ImageSBOMName(version string) string { return "ferry_" + version + "_image.cdx.json" }

// writeImageSBOM describes the image: the Linux binaries with their
// modules, and the CA bundle with the module it comes from.
func (o Options) writeImageSBOM(src Source, bins []Binary, res *Result) (File, error) {
	img := res.Images["image"]
	bom := newBOM(src, imageComponent(src, img))
	var comps []cdx.Component
	for _, b := range bins {
		if b.Platform.OS != "linux" {
			continue
		}
		sum, err := hashFile(filepath.Dir(b.Path), filepath.Base(b.Path), "")
		if err != nil {
			return File{}, err
		}
		inner, err := binaryBOM(src, b, sum)
		if err != nil {
			return File{}, err
		}
		c := *inner.Metadata.Component
		c.BOMRef += "&goarch=" + b.Platform.Arch
		c.Components = inner.Components
		comps = append(comps, c)
	}
	comps = append(comps, caBundleComponent())
	bom.Components = &comps
	name := ImageSBOMName(src.Version)
	if err := writeBOM(o.Dist, name, bom); err != nil {
		return File{}, err
	}
	return hashFile(o.Dist, name, "")
}

// writeAction writes the release commit's action files, pinned to the
// action image, and what the setup action needs to install and verify
// this release's binaries.
func (o Options) writeAction(src Source, res *Result, pub []byte) error {
	out := filepath.Join(o.Dist, "action")
	res.Action = out
	image := "Dockerfile"
	if ref, ok := res.Images["action"]; ok {
		image = ref.Pinned()
	}
	if o.NoImages {
		// Nothing to pin the container actions to: only the setup action.
		if err := copyTree(filepath.Join(o.Root, "setup"), filepath.Join(out, "setup")); err != nil {
			return err
		}
	} else if _, err := PinActions(o.Root, out, image); err != nil {
		return err
	}
	setup := filepath.Join(out, "setup")
	if err := os.MkdirAll(setup, 0o755); err != nil {
		return err
	}
	download := o.DownloadURL
	if download == "" {
		download = strings.TrimSuffix(o.SourceURL, "/") + "/releases/download/" + src.Version
	}
	env := "FERRY_VERSION=" + src.Version + "\nFERRY_DOWNLOAD_URL=" + download + "\n"
	if o.Cosign != nil && o.Cosign.Keyless {
		env += "FERRY_CERT_IDENTITY_REGEXP=^" + regexp.QuoteMeta(strings.TrimSuffix(o.SourceURL, "/")) + "/\\.github/workflows/release\\.yaml@refs/tags/v\nFERRY_CERT_OIDC_ISSUER=https://token.actions.githubusercontent.com\n"
	}
	copies := map[string]string{"checksums.txt": ChecksumsName(src.Version)}
	if o.Cosign != nil {
		copies["checksums.txt.sigstore.json"] = ChecksumsName(src.Version) + ".sigstore.json"
	}
	for dst, from := range copies {
		b, err := os.ReadFile(filepath.Join(o.Dist, from))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(setup, dst), b, 0o644); err != nil {
			return err
		}
	}
	if len(pub) > 0 {
		if err := os.WriteFile(filepath.Join(setup, "cosign.pub"), pub, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(setup, "release.env"), []byte(env), 0o644)
}

func platformList(ps []Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// goVersion is the Go release the binaries were built with.
func goVersion(bins []Binary) string {
	if len(bins) == 0 {
		return ""
	}
	info, err := buildinfo.ReadFile(bins[0].Path)
	if err != nil {
		return ""
	}
	return info.GoVersion
}

// imageComponent is the SBOM's subject: the image index as pushed.
func imageComponent(src Source, img ImageRef) cdx.Component {
	repo, _, _ := strings.Cut(img.Ref, ":"+src.Version)
	return cdx.Component{
		BOMRef:     img.Pinned(),
		Type:       cdx.ComponentTypeContainer,
		Name:       repo,
		Version:    src.Version,
		PackageURL: "pkg:oci/ferry@" + strings.ReplaceAll(img.Digest, ":", "%3A") + "?repository_url=" + repo + "&tag=" + src.Version,
		Licenses:   &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}},
	}
}

// caBundleComponent is the image's CA bundle and where it comes from.
func caBundleComponent() cdx.Component {
	const mod = "golang.org/x/crypto/x509roots/fallback"
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				version = d.Version
			}
		}
	}
	return cdx.Component{
		BOMRef:      "file:/etc/ssl/certs/ca-certificates.crt",
		Type:        cdx.ComponentTypeData,
		Name:        "/etc/ssl/certs/ca-certificates.crt",
		Description: "Mozilla NSS root certificates, from " + mod + " " + version,
		Version:     version,
		PackageURL:  "pkg:golang/" + mod + "@" + version,
		Licenses:    &cdx.Licenses{{License: &cdx.License{ID: "BSD-3-Clause"}}},
	}
}

// copyTree copies the files under from into to.
func copyTree(from, to string) error {
	if _, err := os.Stat(from); os.IsNotExist(err) {
		return nil
	}
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return writeLike(dst, b, path)
	})
}
