# ferry's container image: one static binary, the CA certificates, and a
# passwd entry for the non-root user 65532. Nothing else: no shell, no
# package manager.
#
# Two targets hold the same files:
#
#   image   docker build --target image .
#           The image ferry is published as, and what hack/image.sh builds
#           and tests. Runs as 65532:65532.
#
#   action  The last stage, so what `docker build .` gives, and what the
#           runners build for action.yml and steps/*/action.yml (a container
#           action cannot choose a target). Runs as root: GitHub's and
#           Gitea's runners mount the workspace and the $GITHUB_OUTPUT and
#           $GITHUB_STEP_SUMMARY files owned by the runner's own user, and a
#           container action "must be run by the default Docker user (root)"
#           to write them. The container is the job's own, with no more
#           rights than the job has; see docs/security.md.
#
# GO_IMAGE is the build stage's base: any image with Go at the version
# go.mod names, /bin/sh and /etc/ssl/certs/ca-certificates.crt.
ARG GO_IMAGE=golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
# Module proxy settings of the machine that builds, if it has its own.
ARG GOPROXY
ARG GOSUMDB
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ferry ./cmd/ferry
RUN mkdir -p /out/etc/ssl/certs /out/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && chmod 1777 /out/tmp

FROM scratch AS image
COPY --from=build /out/ /
ENV HOME=/tmp SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
ENTRYPOINT ["/ferry"]

FROM image AS action
USER 0:0
