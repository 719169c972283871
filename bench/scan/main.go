// Command scan is the registry scan benchmark (`make bench-scan`): ferry
// bump --dry-run over 50 image policies against `crane ls` run once per
// repository in sequence, side by side in one run, on a real
// docker-registry (internal/images/registrytest), twice: behind a token
// server (bearer tokens, as GHCR, Docker Hub, Harbor and Quay work), then
// with htpasswd authentication (the registry checks a bcrypt hash on every
// request, which makes the request count the cost: ferry sends one more
// request per repository than crane, the HEAD of the selected tag).
//
// The registry holds 50 repositories of 300 tags each, in the three tag
// styles ferry's users have: semantic versions (1.M.P), two components in
// one repository (api-0.M.P and sherpa-0.M.P), and numerical build numbers
// (0330NNNN). The generated GitOps repository declares one Flux
// ImageRepository + ImagePolicy per repository and marks one image line per
// policy at an old tag, so every policy has a change to print. ferry lists
// every repository, selects the latest tag, reads its digest and prints the
// diff; crane only lists. Every command is timed as a whole process and
// ferry's peak RSS is read from the kernel. The benchmark fails if ferry's
// diff does not hold the 50 expected edits. Numbers, not a test: nothing here
// asserts a speed.
//
// Each round also times the bound: the requests ferry's scan needs, sent
// from this process with go-containerregistry and nothing else done, plus
// ferry's process start. docker-registry spends about 2 ms of CPU on every
// request (over a third of it compiling its URL router anew for each), so
// on a small machine the registry, not the client, sets the pace; crane's
// time over the bound is the best ratio a scan that reads the digests can
// reach here.
//
// Usage: go run ./bench/scan [-rounds N] [-ferry bin/ferry] [-crane .cache/testbin/crane]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/ferry-ci/ferry/bench/benchkit"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
)

const (
	repositories = 50
	tagsPerRepo  = 300
)

func main() {
	rounds := flag.Int("rounds", 5, "timed rounds per tool")
	data := flag.String("data", "", "keep the registry's storage in `DIR` and reuse it on the next run (default: a temporary folder)")
	hold := flag.Bool("hold", false, "after the runs, keep the token registry and the repository up and print how to run ferry against them, until interrupted")
	ferry := flag.String("ferry", "bin/ferry", "ferry binary")
	crane := flag.String("crane", ".cache/testbin/crane", "crane binary")
	flag.Parse()
	if err := run(*rounds, *ferry, *crane, *data, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scan:", err)
		os.Exit(1)
	}
}

// style is one of the three tag styles: its tags, its policy, the tag the
// repository's marker starts at and the one ferry must select.
type style struct {
	name          string
	tags          func() []string
	policy        string // the ImagePolicy spec's filterTags and policy, indented
	field         string // marker field: "" (whole reference) or ":tag"
	old, expected string
}

var styles = []style{
	{
		name: "semver",
		tags: func() []string {
			var out []string
			for m := range 30 {
				for p := range 10 {
					out = append(out, fmt.Sprintf("1.%d.%d", m, p))
				}
			}
			return out
		},
		policy: "  policy:\n    semver:\n      range: '>=1.0.0'\n",
		old:    "1.0.0", expected: "1.29.9",
	},
	{
		name: "prefixed",
		tags: func() []string {
			var out []string
			for _, c := range []string{"api", "sherpa"} {
				for m := range 15 {
					for p := range 10 {
						out = append(out, fmt.Sprintf("%s-0.%d.%d", c, m, p))
					}
				}
			}
			return out
		},
		policy: "  filterTags:\n    pattern: '^api-(?P<version>.*)$'\n    extract: '$version'\n  policy:\n    semver:\n      range: '>=0.1.0'\n",
		field:  ":tag", old: "api-0.1.0", expected: "api-0.14.9",
	},
	{
		name: "numerical",
		tags: func() []string {
			var out []string
			for n := range tagsPerRepo {
				out = append(out, fmt.Sprintf("0330%04d", n))
			}
			return out
		},
		policy: "  filterTags:\n    pattern: '^\\d{8}$'\n  policy:\n    numerical:\n      order: asc\n",
		field:  ":tag", old: "03300000", expected: "03300299",
	},
}

func run(rounds int, ferry, crane, data string, hold bool) error {
	if err := benchkit.Require("make bench-scan", ferry, crane); err != nil {
		return err
	}
	ferry, _ = filepath.Abs(ferry)
	crane, _ = filepath.Abs(crane)
	if err := benchkit.Require("hack/registry.sh", registrytest.Binary); err != nil {
		return err
	}
	work, cleanup, err := benchkit.WorkDir("bench/scan", false)
	if err != nil {
		return err
	}
	defer cleanup()
	regDir := filepath.Join(work, "registry")
	if data != "" {
		regDir, _ = filepath.Abs(data)
	}
	if err := os.MkdirAll(regDir, 0o755); err != nil {
		return err
	}
	filled := filepath.Join(regDir, "filled")
	// The tags are pushed once, through a token registry (cheap to
	// authenticate); the htpasswd registry then serves the same storage.
	reg, err := registrytest.RunWith(regDir, registrytest.Options{Auth: registrytest.Token})
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err = os.Stat(filled); err != nil {
		if err = fill(reg); err == nil {
			fmt.Printf("%d repositories x %d tags pushed in %s\n\n", repositories, tagsPerRepo, time.Since(start).Round(time.Millisecond))
			err = os.WriteFile(filled, nil, 0o644)
		}
	}
	if err == nil {
		err = measure("token auth (bearer tokens from a token server, as GHCR, Docker Hub, Harbor, Quay)", reg, work, rounds, ferry, crane)
	}
	if err == nil && hold {
		err = holdUp(reg, work, ferry)
	}
	reg.Stop()
	if err != nil || hold {
		return err
	}
	reg, err = registrytest.RunWith(regDir, registrytest.Options{Auth: registrytest.Htpasswd})
	if err != nil {
		return err
	}
	defer reg.Stop()
	return measure("htpasswd auth (bcrypt on every request)", reg, work, rounds, ferry, crane)
}

// holdUp keeps the registry running with a repository to run ferry on,
// for profiling, until interrupted.
func holdUp(reg *registrytest.Registry, work, ferry string) error {
	repo := filepath.Join(work, "hold")
	if err := writeRepo(repo, reg.Host); err != nil {
		return err
	}
	env, _ := images.RegistryEnv(reg.Host)
	fmt.Printf("holding; run:\n  %s_USERNAME=%s %s_PASSWORD=%s %s bump --dry-run --repo %s\n", env, reg.Username, env, reg.Password, ferry, repo)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

// measure times both tools against one registry and prints the result.
func measure(title string, reg *registrytest.Registry, work string, rounds int, ferry, crane string) error {
	dir, err := os.MkdirTemp(work, "run-")
	if err != nil {
		return err
	}
	repo := filepath.Join(dir, "gitops")
	if err := writeRepo(repo, reg.Host); err != nil {
		return err
	}
	// crane reads its login from DOCKER_CONFIG; ferry from its variables.
	dockerConfig := filepath.Join(dir, "docker")
	craneEnv := append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
	login := exec.Command(crane, "auth", "login", reg.Host, "-u", reg.Username, "--password-stdin")
	login.Env = craneEnv
	login.Stdin = strings.NewReader(reg.Password)
	if out, err := login.CombinedOutput(); err != nil {
		return fmt.Errorf("crane auth login: %v: %s", err, out)
	}
	env, _ := images.RegistryEnv(reg.Host) // 127.0.0.1:PORT has a spelling
	ferryEnv := append(os.Environ(),
		"DOCKER_CONFIG="+filepath.Join(dir, "no-docker-config"),
		env+"_USERNAME="+reg.Username,
		env+"_PASSWORD="+reg.Password)

	runFerry := func() (time.Duration, int64, error) {
		cmd := exec.Command(ferry, "bump", "--dry-run", "--repo", repo)
		cmd.Env = ferryEnv
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil {
			return 0, 0, fmt.Errorf("ferry bump: %v: %s", err, errb.String())
		}
		if err := checkDiff(out.String()); err != nil {
			return 0, 0, err
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
		return d, rss, nil
	}
	runStart := func() (time.Duration, error) {
		t0 := time.Now()
		if out, err := exec.Command(ferry, "version").CombinedOutput(); err != nil {
			return 0, fmt.Errorf("ferry version: %v: %s", err, out)
		}
		return time.Since(t0), nil
	}
	runCrane := func() (time.Duration, error) {
		t0 := time.Now()
		for i := range repositories {
			cmd := exec.Command(crane, "ls", reg.Host+"/"+repoName(i))
			cmd.Env = craneEnv
			out, err := cmd.Output()
			if err != nil {
				return 0, fmt.Errorf("crane ls: %v", err)
			}
			if n := strings.Count(string(out), "\n"); n != tagsPerRepo {
				return 0, fmt.Errorf("crane ls %s listed %d tags, want %d", repoName(i), n, tagsPerRepo)
			}
		}
		return time.Since(t0), nil
	}

	// Warm-up (page cache, first exec), then the tools in turn.
	if _, _, err := runFerry(); err != nil {
		return err
	}
	if _, err := runCrane(); err != nil {
		return err
	}
	var ft, ct, rt, st []time.Duration
	var peak int64
	for range rounds {
		d, rss, err := runFerry()
		if err != nil {
			return err
		}
		ft = append(ft, d)
		peak = max(peak, rss)
		if d, err = runCrane(); err != nil {
			return err
		}
		ct = append(ct, d)
		if d, err = requestsAlone(reg); err != nil {
			return err
		}
		rt = append(rt, d)
		if d, err = runStart(); err != nil {
			return err
		}
		st = append(st, d)
	}
	fm, cm, rm, sm := benchkit.Median(ft), benchkit.Median(ct), benchkit.Median(rt), benchkit.Median(st)
	fmt.Printf("== %s, registry %s\n", title, reg.Host)
	fmt.Printf("ferry bump --dry-run, %d policies:       median %6.3fs  %s\n", repositories, fm.Seconds(), times(ft))
	fmt.Printf("crane ls x %d repositories in sequence:  median %6.3fs  %s\n", repositories, cm.Seconds(), times(ct))
	fmt.Printf("ratio (crane / ferry): %.1fx   ferry peak RSS: %.1f MiB\n", cm.Seconds()/fm.Seconds(), float64(peak)/1024)
	fmt.Printf("bound: the scan's requests alone (a ping, one login, %d tag lists, %d digest HEADs), in-process, %d repositories at a time:\n", repositories, repositories, images.DefaultScanOptions().Concurrency)
	fmt.Printf("         median %.3fs %s\n", rm.Seconds(), times(rt))
	fmt.Printf("       + ferry's process start (ferry version): median %.3fs %s\n", sm.Seconds(), times(st))
	fmt.Printf("       = %.3fs: crane / that = %.1fx, the ratio no scan that reads the digests and starts like ferry can pass here\n\n", (rm + sm).Seconds(), cm.Seconds()/(rm+sm).Seconds())
	return nil
}

// requestsAlone sends the registry the requests ferry's scan needs and
// nothing else (one ping, one login for every repository, then each
// repository's tag list and the HEAD of the tag ferry selects, 8
// repositories at a time, as ferry reads them) from this process, over
// go-containerregistry as ferry does: no process start, no repository to
// read, no tag to parse. What the registry takes to answer them bounds
// how fast any scan that reads the digests can be on this machine.
func requestsAlone(reg *registrytest.Registry) (time.Duration, error) {
	ctx := context.Background()
	t0 := time.Now()
	var scopes []string
	var repos []name.Repository
	for i := range repositories {
		r, err := name.NewRepository(reg.Host + "/" + repoName(i))
		if err != nil {
			return 0, err
		}
		repos = append(repos, r)
		scopes = append(scopes, r.Scope(transport.PullScope))
	}
	auth := &authn.Basic{Username: reg.Username, Password: reg.Password}
	tr, err := transport.NewWithContext(ctx, repos[0].Registry, auth, remote.DefaultTransport, scopes)
	if err != nil {
		return 0, err
	}
	sem := make(chan struct{}, images.DefaultScanOptions().Concurrency)
	errs := make(chan error, repositories)
	var wg sync.WaitGroup
	for i, r := range repos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			tags, err := remote.List(r, remote.WithTransport(tr), remote.WithContext(ctx))
			if err == nil && len(tags) != tagsPerRepo {
				err = fmt.Errorf("%s: %d tags, want %d", r, len(tags), tagsPerRepo)
			}
			if err == nil {
				_, err = remote.Head(r.Tag(styles[i%len(styles)].expected), remote.WithTransport(tr), remote.WithContext(ctx))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

func times(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.3f", d.Seconds()))
	}
	return "(" + strings.Join(s, " ") + ")"
}

func repoName(i int) string { return fmt.Sprintf("bench/app-%02d-%s", i, styles[i%len(styles)].name) }

// fill pushes the tags: per repository one image, tagged 300 times,
// repositories pushed 8 at a time.
func fill(reg *registrytest.Registry) error {
	var wg sync.WaitGroup
	errs := make(chan error, repositories)
	sem := make(chan struct{}, 8)
	for i := range repositories {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := reg.PushShared(context.Background(), repoName(i), styles[i%len(styles)].tags()...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// writeRepo writes the GitOps repository: the Flux image objects and one
// marked file per policy.
func writeRepo(dir, host string) error {
	var objs strings.Builder
	for i := range repositories {
		s := styles[i%len(styles)]
		name := fmt.Sprintf("app-%02d", i)
		fmt.Fprintf(&objs, "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  image: %s/%s\n  interval: 5m\n", name, host, repoName(i))
		fmt.Fprintf(&objs, "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: %s\n%s", name, name, s.policy)
		value := host + "/" + repoName(i) + ":" + s.old
		if s.field == ":tag" {
			value = s.old
		}
		file := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: %s # {\"$imagepolicy\": \"flux-system:%s%s\"}\n",
			name, value, name, s.field)
		if s.field == ":tag" {
			file = fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nimages:\n  - name: app\n    newName: %s/%s\n    newTag: %q # {\"$imagepolicy\": \"flux-system:%s%s\"}\n",
				host, repoName(i), value, name, s.field)
		}
		p := filepath.Join(dir, "apps", name, "deployment.yaml")
		if s.field == ":tag" {
			p = filepath.Join(dir, "apps", name, "kustomization.yaml")
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
			return err
		}
	}
	p := filepath.Join(dir, "clusters", "bench", "images.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(objs.String()), 0o644)
}

// checkDiff checks ferry's output: one edit per policy, to its expected tag.
func checkDiff(diff string) error {
	var added []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			added = append(added, l)
		}
	}
	if len(added) != repositories {
		return fmt.Errorf("ferry's diff has %d added lines, want %d:\n%s", len(added), repositories, diff)
	}
	sort.Strings(added)
	for _, s := range styles {
		n := 0
		for _, l := range added {
			if strings.Contains(l, s.expected+`"`) || strings.Contains(l, ":"+s.expected+" ") {
				n++
			}
		}
		if want := (repositories + len(styles) - 1 - indexOf(s)) / len(styles); n != want {
			return fmt.Errorf("ferry's diff moves %d %s policies to %s, want %d", n, s.name, s.expected, want)
		}
	}
	return nil
}

func indexOf(s style) int {
	for i := range styles {
		if styles[i].name == s.name {
			return i
		}
	}
	return -1
}
