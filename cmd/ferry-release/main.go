// Command ferry-release makes a release of ferry from the checked-out
// commit: binaries, archives, checksums and SBOMs in --dist, multi-arch
// images pushed to --registry, signatures and provenance with cosign, and
// the release commit's action files pinned to the image's digest
// (dist/action). `make release-local` and the release workflows run it;
// docs/releasing.md says how.
//
// Exit status: 0 done, 2 any error (nothing is pushed when a check that
// needs no build fails: work tree, version, registry, signing key).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ferry-ci/ferry/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ferry-release:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ferry-release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o         release.Options
		platforms string
		cosign    string
		keyless   bool
		unsigned  bool
	)
	fs.StringVar(&o.Root, "root", ".", "ferry's checkout")
	fs.StringVar(&o.Dist, "dist", "dist", "the folder the release is written to (emptied first)")
	fs.StringVar(&o.Version, "version", "", "the release's version: a vX.Y.Z tag at HEAD (default: the tag at HEAD, else a snapshot)")
	fs.StringVar(&o.Registry, "registry", "", "where the images go: host[:port][/path] (images <registry>/ferry:<version> and :<version>-action)")
	fs.BoolVar(&o.Insecure, "insecure-registry", false, "speak plain HTTP to the registry (loopback registries always are)")
	fs.BoolVar(&o.NoImages, "no-images", false, "binaries, archives, SBOMs and checksums only: no registry")
	fs.StringVar(&platforms, "platforms", platformsString(release.DefaultPlatforms), "the binaries' platforms, OS/ARCH,...")
	fs.StringVar(&o.Go, "go", "go", "the go command")
	fs.StringVar(&cosign, "cosign", "cosign", "the cosign command")
	fs.BoolVar(&keyless, "keyless", false, "sign with the CI job's OIDC identity (Fulcio, Rekor) instead of COSIGN_KEY")
	fs.BoolVar(&unsigned, "unsigned", false, "make an unsigned release (benchmarks, trials); never for publishing")
	fs.StringVar(&o.SourceURL, "source-url", sourceURL(getenv), "the repository's web address (image annotations, provenance)")
	fs.StringVar(&o.DownloadURL, "download-url", "", "where the setup action downloads this release's archives (default <source-url>/releases/download/<version>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.Platforms, err = release.ParsePlatforms(platforms); err != nil {
		return err
	}
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		return err
	}
	if o.Dist, err = filepath.Abs(o.Dist); err != nil {
		return err
	}
	if o.Cosign, err = signer(cosign, keyless, unsigned, o.Registry, o.Insecure, getenv); err != nil {
		return err
	}
	o.Builder = release.BuilderFromEnv(getenv)
	o.Progress = func(s string) { fmt.Fprintln(stderr, "ferry-release:", s) }
	res, err := release.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s (commit %s)\n", res.Version, res.Commit)
	for _, v := range release.Variants {
		if ref, ok := res.Images[v.Name]; ok {
			fmt.Fprintf(stdout, "%-7s %s\n", v.Name, ref.Pinned())
		}
	}
	for _, f := range res.Files {
		fmt.Fprintf(stdout, "file    %s  %s\n", f.SHA256, f.Name)
	}
	fmt.Fprintf(stdout, "action  %s\n", res.Action)
	if res.Signed == "" {
		fmt.Fprintln(stdout, "signed  no")
	} else {
		fmt.Fprintln(stdout, "signed  "+res.Signed)
	}
	return nil
}

// signer is the cosign signer the flags and COSIGN_KEY ask for: the key
// a path, or the PEM itself in the variable (as CI secrets hold it).
func signer(path string, keyless, unsigned bool, registry string, insecure bool, getenv func(string) string) (*release.Cosign, error) {
	key := getenv("COSIGN_KEY")
	switch {
	case unsigned && (keyless || key != ""):
		return nil, errors.New("--unsigned with a signing key or --keyless: choose one")
	case unsigned:
		return nil, nil
	case keyless && key != "":
		return nil, errors.New("--keyless with COSIGN_KEY set: choose one")
	case !keyless && key == "":
		return nil, errors.New("COSIGN_KEY is not set: sign with a cosign key (COSIGN_KEY=<file or PEM>, COSIGN_PASSWORD=<its password>; cosign generate-key-pair makes one), with --keyless in CI, or make an unsigned trial with --unsigned")
	}
	c := &release.Cosign{Path: path, Keyless: keyless, AllowHTTP: insecure || loopback(registry)}
	if key != "" {
		if strings.Contains(key, "-----BEGIN") {
			c.Key = "env://COSIGN_KEY"
		} else if _, err := os.Stat(key); err != nil {
			return nil, fmt.Errorf("COSIGN_KEY: %w", err)
		} else {
			c.Key = key
		}
	}
	return c, nil
}

// loopback says whether the registry is on this machine, where
// registries speak plain HTTP.
func loopback(registry string) bool {
	host := strings.SplitN(registry, "/", 2)[0]
	for _, l := range []string{"127.0.0.1", "localhost", "[::1]"} {
		if host == l || strings.HasPrefix(host, l+":") {
			return true
		}
	}
	return false
}

// sourceURL is the repository's address in Actions, else ferry's home.
func sourceURL(getenv func(string) string) string {
	if s, r := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"); s != "" && r != "" {
		return strings.TrimSuffix(s, "/") + "/" + r
	}
	return "https://github.com/ferry-ci/ferry"
}

func platformsString(ps []release.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
