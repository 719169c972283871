# ferry — make targets. `make example` and `make test` are the two README commands.
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
TESTBIN := $(CURDIR)/.cache/testbin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(shell git rev-parse HEAD 2>/dev/null)

.PHONY: build image release-local cosign example test tools controlplane gitea vet bench bench-render bench-discover bench-hostile bench-apply bench-fleet bench-diff bench-drift bench-scan bench-helm bench-prdiff bench-verify bench-bump bench-start registry crane clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ferry ./cmd/ferry

# The container image (Dockerfile, target image) built with buildah, no
# Docker daemon: pushed to a local registry, pulled back and run as
# 65532:65532; prints its compressed size. REGISTRY=host:port pushes
# elsewhere.
image:
	VERSION=$(VERSION) hack/image.sh

# A release of the checked-out commit (cmd/ferry-release, docs/releasing.md):
# binaries, archives, SBOMs and checksums in dist/, the images pushed to
# REGISTRY=host:port as ferry:<version> and ferry:<version>-action (linux
# amd64 + arm64), signed with COSIGN_KEY (a key file or its PEM; its
# password in COSIGN_PASSWORD), and dist/action: the release commit's
# action files pinned to the action image's digest. The version is the
# tag at HEAD (VERSION=vX.Y.Z must be that tag), else a snapshot.
# PLATFORMS=os/arch,... narrows the binaries; DIST the folder.
PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64
DIST ?= $(CURDIR)/dist
release-local: cosign
	$(GO) run ./cmd/ferry-release --registry "$(REGISTRY)" --cosign "$(TESTBIN)/cosign" --platforms "$(PLATFORMS)" --dist "$(DIST)" \
	  $(if $(filter command line environment,$(origin VERSION)),--version "$(VERSION)") $(RELEASE_FLAGS)

# cosign v3.1.3 from the Go module proxy into .cache/testbin.
cosign:
	TESTBIN="$(TESTBIN)" hack/cosign.sh

# ferry's main job on the bundled example, end to end: render the GPU-cluster
# repo with its throwaway age key, then apply, re-apply and prune it on the
# cluster KUBECONFIG names or, without one, on a local control plane.
example: build
	hack/example.sh

# kustomize, flux, helm and flux-operator (the oracles) and Alertmanager
# (the notify tests' receiver), built from the Go module proxy into
# .cache/testbin.
tools:
	hack/tools.sh

# kube-apiserver, etcd and kubectl v1.37.2 for the tests, built from the Go
# module proxy (cold: minutes; cached in .cache/testbin and Go's build cache).
controlplane:
	hack/controlplane.sh

# Gitea v1.26.0 for the forge tests (comments, pull requests, issues),
# built from the Go module proxy into .cache/testbin (cold: minutes).
gitea:
	hack/gitea.sh

vet:
	@unformatted=$$(gofmt -l cmd internal); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# The whole test suite, with the tools it compares against.
test: tools controlplane gitea registry cosign vet
	FERRY_TESTBIN=$(TESTBIN) $(GO) test -count=1 -timeout 60m ./...

bench: bench-render bench-discover bench-hostile bench-apply bench-diff bench-drift bench-scan bench-helm bench-prdiff bench-verify bench-bump

bench-render: build tools
	bench/render.sh

# Discovery benchmark: ferry render --list of generated fleets of 2,000 and
# 5,000 Flux Kustomizations against the kustomize CLI building their
# cluster roots (the floor: the roots alone).
bench-discover: build tools
	bench/discover.sh

# Hostile-input benchmark: an alias bomb and a 200 MB file through ferry
# render and kustomize build (wall time, exit, peak RSS), and how fast
# ferry exits on SIGTERM during a large render.
bench-hostile: build tools
	bench/hostile.sh

# Diff benchmark: ferry diff of two pull requests on a 100-overlay repo
# against checking out both revisions, kustomize build of every overlay at
# each and diff -u.
bench-diff: build tools
	bench/diff.sh

# Apply benchmark: ferry apply against kubectl's server-side apply with an
# ApplySet (first apply, no-op re-apply, prune of 500 of 1,000 objects) on
# the test control plane, then the fleet case (bench-fleet). Numbers, not a
# test: nothing asserts a speed.
bench-apply: build tools controlplane
	$(GO) run ./bench/apply
	$(GO) run ./bench/fleet

# Fleet apply benchmark: ferry apply of 50 targets x 20 objects against
# kustomize build of each overlay + one kubectl apply --server-side, on the
# test control plane: first apply, one object changed, nothing changed.
bench-fleet: build tools controlplane
	$(GO) run ./bench/fleet

# Drift benchmark: ferry drift against kubectl diff --server-side over the
# same 1,000 applied objects, 10 of them drifted, on the test control plane.
bench-drift: build controlplane
	$(GO) run ./bench/drift

# Debian's docker-registry for the bump tests and the scan benchmark
# (installed with apt-get when missing, as root or in CI).
registry:
	hack/registry.sh

# crane, the tool the scan benchmark compares against, from the module graph.
crane:
	$(GO) build -o $(TESTBIN)/crane github.com/google/go-containerregistry/cmd/crane

# Scan benchmark: ferry bump --dry-run over 50 image policies against
# `crane ls` once per repository in sequence, on a local docker-registry
# holding 50 repositories x 300 tags. Prints the ratio and ferry's peak RSS.
bench-scan: build registry crane
	$(GO) run ./bench/scan

# Helm benchmark: one ferry render of 50 HelmReleases over 3 charts on a
# local docker-registry against helm template once per release with the
# same values files, charts cached on both sides (then cold): wall and CPU
# times, the ratio, ferry's peak RSS.
bench-helm: build tools registry
	bench/helm.sh

# Pull-request diff benchmark: ferry diff against flate v0.6.5 (built with
# Go 1.27.3 into .cache/testbin when missing) in its changed-only mode, on
# a generated home-operations style fleet (80 apps, 71 HelmReleases, charts
# on a local docker-registry): one line of a HelmRelease, of a plain
# manifest and of a component 15 apps share, warm and cold, then a full
# render. Prints the ratios ferry/flate, ferry's peak RSS and whether both
# report the same changed objects.
bench-prdiff: build tools registry
	bench/prdiff.sh

# Chart bump benchmark: ferry bump --dry-run of 50 HelmReleases over 10
# charts of 100 versions each on a local docker-registry against crane ls
# per chart, then helm template of the pinned and the new version and
# diff -u per release (bench/bump.sh): wall and CPU times warm and cold,
# the ratio, ferry's peak RSS.
bench-bump: build tools registry crane
	bench/bump.sh

# Start benchmark (bench/start.sh; as root, 10-20 minutes, so not in
# make bench): in the act runner, the time from a job's start to ferry's
# first line for the release's pinned image pulled cold and already
# pulled, the setup action, and today's Dockerfile action built from empty
# caches; the ratio, and what the image and the binary are made of.
# Chart signature benchmark: ferry render of 50 HelmReleases whose
# charts must carry a cosign signature, against cosign verify + helm
# template per release (bench/verify.sh).
bench-verify: build tools cosign registry
	bench/verify.sh

bench-start: registry
	bench/start.sh

clean:
	rm -rf $(BIN)
