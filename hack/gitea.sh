#!/usr/bin/env bash
# Builds Gitea (the real forge the diff, bump and drift tests talk to) from
# the Go module proxy into .cache/testbin/gitea. Gitea's go.mod has replace
# directives, so `go install` is refused: the module is downloaded and built
# inside its own folder. The templates and options it serves from stay in
# that folder; .cache/testbin/gitea.root records where it is.
# Cold: ~7 minutes and ~1.4 GB RSS on 2 cores; warm: seconds; cached: skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/.cache/testbin"
VERSION=v1.26.0
mkdir -p "$BIN"
DIR=$(cd / && go mod download -json "code.gitea.io/gitea@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$DIR" ] || { echo "hack/gitea.sh: could not download code.gitea.io/gitea@$VERSION" >&2; exit 1; }
if "$BIN/gitea" --version 2>/dev/null | grep -c "version ${VERSION#v}" >/dev/null && [ "$(cat "$BIN/gitea.root" 2>/dev/null)" = "$DIR" ]; then
  exit 0
fi
echo "hack/gitea.sh: building gitea $VERSION" >&2
(cd "$DIR" && CGO_ENABLED=1 GOFLAGS="-buildvcs=false -mod=mod" go build -trimpath -tags 'sqlite sqlite_unlock_notify' \
  -ldflags "-s -w -X main.Version=${VERSION#v}" -o "$BIN/gitea.new" .)
mv "$BIN/gitea.new" "$BIN/gitea"
echo "$DIR" > "$BIN/gitea.root"
"$BIN/gitea" --version
