#!/usr/bin/env bash
# The release commit: what `uses: ferry-ci/ferry/steps/diff@vX` fetches.
#
#   hack/release-commit.sh [--name NAME --email EMAIL] [--push REMOTE] DIST_ACTION TAG
#
# Makes a commit whose parent is HEAD (the commit TAG names) and whose tree
# is HEAD's with action.yml, steps/ and setup/ replaced by DIST_ACTION's
# files (dist/action of `go run ./cmd/ferry-release`: the same files, every
# runs.image pinned to docker://<registry>/ferry:<version>-action@sha256:…),
# then moves the tag TAG (vX.Y.Z) and, for a release that is not a
# pre-release and not older than the newest vX.*.* release, the major tag
# vX to it. With --push it first checks REMOTE's tags (TAG must still be
# HEAD there; vX must not be newer) and then force-pushes both tags, each
# leased on the value it had, so that a tag someone else moved meanwhile is
# not overwritten. The main branch keeps `image: Dockerfile`: only tags
# point at release commits.
#
# Refuses (exit 2, nothing changed) when TAG is not a vX.Y.Z version, is
# not at HEAD, when DIST_ACTION has no action.yml, or when any of its
# action.yml files does not pin its image by digest. The identity of the
# commit and the tags is --name/--email, else git's own (user.name,
# GIT_AUTHOR_NAME, ...). Prints the release commit on stdout.
set -euo pipefail
say() { echo "hack/release-commit.sh: $*" >&2; }
die() { say "$*"; exit 2; }
usage() { die "usage: hack/release-commit.sh [--name NAME --email EMAIL] [--push REMOTE] DIST_ACTION TAG"; }

name="" email="" remote=""
while [ $# -gt 0 ]; do
  case "$1" in
    --name) [ $# -ge 2 ] || usage; name="$2"; shift 2 ;;
    --email) [ $# -ge 2 ] || usage; email="$2"; shift 2 ;;
    --push) [ $# -ge 2 ] || usage; remote="$2"; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || usage
dist="$1" tag="$2"

semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ "$tag" =~ $semver ]] || die "$tag: not a release version vX.Y.Z"
major="v${BASH_REMATCH[1]}"
prerelease="${BASH_REMATCH[4]}"

git rev-parse --git-dir >/dev/null 2>&1 || die "$PWD: not a Git repository"
[ -d "$dist" ] || die "$dist: no such folder (the dist/action folder of the release)"
dist="$(cd "$dist" && pwd)"
[ -f "$dist/action.yml" ] || die "$dist: no action.yml (the dist/action folder of the release)"

head="$(git rev-parse --verify "HEAD^{commit}")"
tagged="$(git rev-parse --verify -q "refs/tags/$tag^{commit}")" || die "$tag: no such tag"
[ "$tagged" = "$head" ] || die "$tag is $tagged, not HEAD ($head): check out the tagged commit"

# Every action must run the released image, never build one.
pins=()
while IFS= read -r -d '' f; do
  rel="${f#"$dist"/}"
  if grep -Eq '^[[:space:]]*image:' "$f"; then
    grep -Eq '^[[:space:]]*image:[[:space:]]*"?docker://[^[:space:]"]+@sha256:[0-9a-f]{64}"?[[:space:]]*$' "$f" \
      || die "$dist/$rel: runs.image is not pinned by digest (docker://…@sha256:…): $(grep -E '^[[:space:]]*image:' "$f" | head -1 | sed 's/^[[:space:]]*//')"
    pins+=("$(sed -nE 's/^[[:space:]]*image:[[:space:]]*"?docker:\/\/([^[:space:]"]+)"?.*/\1/p' "$f" | head -1)")
  fi
done < <(find "$dist" -name action.yml -type f -print0)
[ "${#pins[@]}" -gt 0 ] || die "$dist: no action.yml names an image"

if [ -n "$name" ]; then export GIT_AUTHOR_NAME="$name" GIT_COMMITTER_NAME="$name"; fi
if [ -n "$email" ]; then export GIT_AUTHOR_EMAIL="$email" GIT_COMMITTER_EMAIL="$email"; fi

# The remote's tags: TAG must still be the tagged commit there, and the
# newest vX.*.* decides whether vX moves.
declare -A remote_ref=()
versions=()
if [ -n "$remote" ]; then
  ls_remote="$(git ls-remote --tags "$remote" "refs/tags/$major" "refs/tags/$major.*")" \
    || die "$remote: cannot list its tags"
  while read -r sha ref; do
    [ -n "${ref:-}" ] || continue
    case "$ref" in
      *'^{}') continue ;;
    esac
    remote_ref["$ref"]="$sha"
  done <<<"$ls_remote"
  peeled="$(awk -v r="refs/tags/$tag" '$2 == r "^{}" { p = $1 } $2 == r { s = $1 } END { print (p != "" ? p : s) }' <<<"$ls_remote")"
  [ "$peeled" = "$head" ] || die "$remote: $tag is ${peeled:-absent}, not $head: refusing to move it"
  while read -r _ ref; do
    v="${ref#refs/tags/}"
    [[ "$v" =~ $semver && "$ref" != *'^{}' ]] && versions+=("$v")
  done <<<"$ls_remote"
else
  while read -r v; do versions+=("$v"); done < <(git tag -l "$major.*")
fi

move_major=false
if [ -z "$prerelease" ]; then
  newest="$(printf '%s\n' "$tag" "${versions[@]}" | grep -E "$semver" | grep -v -- '-' | sort -V | tail -1)"
  if [ "$newest" = "$tag" ]; then
    move_major=true
  else
    say "$newest is newer than $tag: $major stays where it is"
  fi
fi

# The release commit's tree: HEAD's, with action.yml, steps/ and setup/
# taken from DIST_ACTION, in a temporary index (the checkout is untouched).
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export GIT_INDEX_FILE="$tmp/index"
git read-tree "$head"
git rm -r -q --cached --ignore-unmatch -- action.yml steps setup >/dev/null
while IFS= read -r -d '' f; do
  rel="${f#"$dist"/}"
  case "$rel" in
    action.yml | steps/* | setup/*) ;;
    *) die "$dist/$rel: the release commit replaces only action.yml, steps/ and setup/" ;;
  esac
  if [ -L "$f" ]; then die "$dist/$rel: a symbolic link"; fi
  # The source's mode where the file is the source's (ferry-release
  # writes every file 0644), else the file's own.
  mode="$(git ls-tree "$head" -- "$rel" | awk '{ print $1 }')"
  case "$mode" in
    100644 | 100755) ;;
    *) mode=100644; [ -x "$f" ] && mode=100755 ;;
  esac
  blob="$(git hash-object -w -- "$f")"
  git update-index --add --cacheinfo "$mode,$blob,$rel"
done < <(find "$dist" -type f -print0 | sort -z)
tree="$(git write-tree)"
unset GIT_INDEX_FILE

msg="$(printf 'ferry %s\n\nThe release commit of %s: its action.yml, steps/ and setup/ run the\nreleased image instead of building the Dockerfile:\n\n' "$tag" "$head"
  printf '%s\n' "${pins[@]}" | sort -u | sed 's/^/  /')"
commit="$(git commit-tree "$tree" -p "$head" -m "$msg")"
say "release commit $commit (parent $head)"

git tag -f -a -m "ferry $tag" "$tag" "$commit" >/dev/null
say "moved $tag to $commit"
moved=("refs/tags/$tag")
if $move_major; then
  git tag -f -a -m "ferry $tag" "$major" "$commit" >/dev/null
  say "moved $major to $commit"
  moved+=("refs/tags/$major")
fi

if [ -n "$remote" ]; then
  lease=()
  for ref in "${moved[@]}"; do
    lease+=("--force-with-lease=$ref:${remote_ref[$ref]:-}")
  done
  git push -q "${lease[@]}" "$remote" "${moved[@]}" >&2
  say "pushed ${moved[*]#refs/tags/} to $remote"
fi
echo "$commit"
