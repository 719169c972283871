#!/usr/bin/env bash
# ferry's setup action (setup/action.yml): puts the release binary for the
# runner's OS and architecture on PATH.
#
# What it trusts is this folder, written by the release tool at release
# time: setup/release.env (FERRY_VERSION, FERRY_DOWNLOAD_URL and, for a
# keyless release, FERRY_CERT_IDENTITY_REGEXP and FERRY_CERT_OIDC_ISSUER)
# and setup/checksums.txt (sha256sum format). A workflow that pins the
# action by commit SHA therefore pins the binary too. When cosign is on
# PATH the checksums file's signature (setup/checksums.txt.sigstore.json)
# is verified: against setup/cosign.pub for a key-signed release, else
# keyless against the release workflow's certificate identity.
#
# Steps: the archive ferry_<V>_<os>_<arch>.tar.gz (.zip on Windows) is
# downloaded from the release's download URL (curl, else wget), its sha256
# compared with setup/checksums.txt, ferry[.exe] extracted into the tool
# cache ($RUNNER_TOOL_CACHE/ferry/<V without v>/<x64|arm64>, the layout of
# @actions/tool-cache, reused while it still matches), run once, and its
# folder added to $GITHUB_PATH. Outputs: version, path (of the binary).
#
# Environment (setup/action.yml maps its inputs onto these):
#   FERRY_SETUP_VERSION           version to install (default: the release's)
#   FERRY_SETUP_DOWNLOAD_URL      base URL of the release's files (default:
#                                 FERRY_DOWNLOAD_URL of setup/release.env)
#   FERRY_SETUP_VERIFY_SIGNATURE  auto (verify when cosign is on PATH), true
#                                 (cosign required), false
# and the runner's RUNNER_OS, RUNNER_ARCH (else uname), RUNNER_TOOL_CACHE
# (else ~/.cache/ferry/tool-cache), RUNNER_TEMP, GITHUB_PATH, GITHUB_OUTPUT.
#
# Every failure is one ::error:: line and exit 1, with nothing added to
# PATH and no partial tool-cache entry left. Nothing downloaded is run
# before its checksum matched, and nothing read is ever evaluated.
set -euo pipefail

say() { echo "ferry setup: $*" >&2; }

# fail prints the one error line (a workflow command: % escaped, CR and LF
# made spaces; sed and tr, as macOS's bash 3.2 differs in ${//} quoting)
# and exits.
fail() {
  local msg
  msg="$(printf '%s' "$*" | sed 's/%/%25/g' | tr '\r\n' '  ')"
  echo "::error::ferry setup: $msg"
  exit 1
}

# redact hides the credentials of a URL (https://user:token@host/...).
redact() { printf '%s' "$1" | sed -E 's#://[^/@]*@#://***@#'; }

# lastline is the last non-empty line of a file (a tool's error).
lastline() { { grep -v '^[[:space:]]*$' "$1" || true; } | tail -1 | tr -d '\r'; }

ACTION_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RELEASE_ENV="$ACTION_DIR/release.env"
CHECKSUMS="$ACTION_DIR/checksums.txt"
BUNDLE="$ACTION_DIR/checksums.txt.sigstore.json"
PUBKEY="$ACTION_DIR/cosign.pub"

# release_var prints NAME's value in setup/release.env (read as data, one
# NAME=VALUE a line, surrounding quotes dropped; never sourced).
release_var() {
  local line
  line="$({ grep -E "^$1=" "$RELEASE_ENV" || true; } | tail -1 | tr -d '\r')"
  line="${line#*=}"
  case "$line" in
    \"*\") line="${line#\"}"; line="${line%\"}" ;;
    \'*\') line="${line#\'}"; line="${line%\'}" ;;
  esac
  printf '%s' "$line"
}

# sha256 prints the lowercase hex sha256 of a file, with the first tool
# found (chosen here, so that a failure is never inside a substitution).
if command -v sha256sum >/dev/null 2>&1; then
  SHA256=(sha256sum)
elif command -v shasum >/dev/null 2>&1; then
  SHA256=(shasum -a 256)
elif command -v openssl >/dev/null 2>&1; then
  SHA256=(openssl dgst -sha256 -r)
else
  fail "no sha256sum, shasum or openssl on PATH to check the download"
fi
sha256() {
  local out
  out="$("${SHA256[@]}" <"$1")"
  out="${out%% *}"
  printf '%s' "$out" | tr 'A-F' 'a-f'
}

# --- the runner's platform ---------------------------------------------
os="${RUNNER_OS:-}"
arch="${RUNNER_ARCH:-}"
if [ -z "$os" ]; then
  case "$(uname -s)" in
    Linux) os=Linux ;;
    Darwin) os=macOS ;;
    MINGW* | MSYS* | CYGWIN*) os=Windows ;;
    *) os="$(uname -s)" ;;
  esac
fi
if [ -z "$arch" ]; then
  case "$(uname -m)" in
    x86_64 | amd64) arch=X64 ;;
    aarch64 | arm64) arch=ARM64 ;;
    *) arch="$(uname -m)" ;;
  esac
fi
case "$os" in
  Linux) goos=linux ext=tar.gz exe=ferry ;;
  macOS) goos=darwin ext=tar.gz exe=ferry ;;
  Windows) goos=windows ext=zip exe=ferry.exe ;;
  *) fail "unsupported OS '$os' (RUNNER_OS): ferry is released for Linux, macOS and Windows" ;;
esac
case "$arch" in
  X64) goarch=amd64 tcarch=x64 ;;
  ARM64) goarch=arm64 tcarch=arm64 ;;
  *) fail "unsupported architecture '$arch' (RUNNER_ARCH) on $os: ferry is released for X64 (amd64) and ARM64" ;;
esac
# On Windows (Git Bash) the runner's paths are Windows paths.
unixpath() { if [ "$os" = Windows ] && command -v cygpath >/dev/null 2>&1; then cygpath -u "$1"; else printf '%s' "$1"; fi; }
hostpath() { if [ "$os" = Windows ] && command -v cygpath >/dev/null 2>&1; then cygpath -w "$1"; else printf '%s' "$1"; fi; }

# --- what the release pinned ---------------------------------------------
if [ ! -f "$RELEASE_ENV" ] || [ ! -f "$CHECKSUMS" ]; then
  missing=setup/release.env
  [ -f "$RELEASE_ENV" ] && missing=setup/checksums.txt
  fail "$missing not found: the setup action works only at a release, whose release commit adds its version and checksums. Pin a release tag or its commit SHA (uses: ferry-ci/ferry/setup@vX.Y.Z), not a branch"
fi
release_version="$(release_var FERRY_VERSION)"
[ -n "$release_version" ] || fail "setup/release.env has no FERRY_VERSION line"

version="${FERRY_SETUP_VERSION:-}"
version="${version//[[:space:]]/}"
[ -n "$version" ] || version="$release_version"
case "$version" in v*) ;; *) version="v$version" ;; esac
semver='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
if ! [[ "$version" =~ $semver ]]; then
  fail "input version '${FERRY_SETUP_VERSION:-}' is not a release version (vMAJOR.MINOR.PATCH)"
fi

base="${FERRY_SETUP_DOWNLOAD_URL:-}"
base="${base//[[:space:]]/}"
[ -n "$base" ] || base="$(release_var FERRY_DOWNLOAD_URL)"
[ -n "$base" ] || fail "setup/release.env has no FERRY_DOWNLOAD_URL line and input download-url is empty"
case "$base" in
  http://* | https://* | file://*) ;;
  *) fail "download URL '$(redact "$base")' is not an http(s) or file URL" ;;
esac
base="${base%/}"

name="ferry_${version}_${goos}_${goarch}.${ext}"
want="$({ awk -v f="$name" '$2 == f || $2 == "*" f { print $1 }' "$CHECKSUMS" || true; } | tr -d '\r' | tr 'A-F' 'a-f')"
if [ -z "$want" ]; then
  if [ "$version" = "$release_version" ]; then
    fail "setup/checksums.txt has no line for $name: release $release_version has no $goos/$goarch build"
  fi
  fail "setup/checksums.txt has no line for $name: this action pins release $release_version and installs only that version; for $version use ferry-ci/ferry/setup@$version"
fi
if [ "$(printf '%s\n' "$want" | wc -l | tr -d ' ')" != 1 ] || ! [[ "$want" =~ ^[0-9a-f]{64}$ ]]; then
  fail "setup/checksums.txt: the line for $name is not one sha256 (want '<64 hex>  $name')"
fi

# --- the checksums file's signature --------------------------------------
verify="${FERRY_SETUP_VERIFY_SIGNATURE:-auto}"
verify="${verify//[[:space:]]/}"
case "$verify" in
  auto | true | false) ;;
  *) fail "input verify-signature is '$verify': want auto, true or false" ;;
esac
TMP_BASE="$(unixpath "${RUNNER_TEMP:-${TMPDIR:-/tmp}}")"
work="$(mktemp -d "$TMP_BASE/ferry-setup.XXXXXX")"
staging=""
cleanup() {
  rm -rf "$work"
  if [ -n "$staging" ]; then rm -rf "$staging"; fi
}
trap cleanup EXIT

if [ "$verify" != false ]; then
  if ! command -v cosign >/dev/null 2>&1; then
    [ "$verify" = true ] && fail "input verify-signature is true but cosign is not on PATH: install it before this step (e.g. sigstore/cosign-installer)"
    say "cosign is not on PATH: the signature of setup/checksums.txt is not verified (its sha256 lines still pin the archive)"
  elif [ ! -f "$BUNDLE" ]; then
    [ "$verify" = true ] && fail "setup/checksums.txt.sigstore.json not found: release $release_version has no signature to verify"
    echo "::warning::ferry setup: setup/checksums.txt.sigstore.json not found: release $release_version carries no signature; not verified"
  elif [ -f "$PUBKEY" ]; then
    cosign verify-blob --key "$PUBKEY" --bundle "$BUNDLE" --insecure-ignore-tlog=true "$CHECKSUMS" >"$work/cosign.log" 2>&1 \
      || fail "setup/checksums.txt: its signature (setup/checksums.txt.sigstore.json) does not verify against setup/cosign.pub: $(lastline "$work/cosign.log")"
    say "setup/checksums.txt: signature verified against setup/cosign.pub"
  else
    identity="$(release_var FERRY_CERT_IDENTITY_REGEXP)"
    issuer="$(release_var FERRY_CERT_OIDC_ISSUER)"
    identity="${identity:-^https://github\.com/ferry-ci/ferry/\.github/workflows/release\.yaml@refs/tags/v}"
    issuer="${issuer:-https://token.actions.githubusercontent.com}"
    cosign verify-blob --bundle "$BUNDLE" --certificate-identity-regexp "$identity" --certificate-oidc-issuer "$issuer" "$CHECKSUMS" >"$work/cosign.log" 2>&1 \
      || fail "setup/checksums.txt: its signature (setup/checksums.txt.sigstore.json) does not verify for identity '$identity' of issuer $issuer: $(lastline "$work/cosign.log")"
    say "setup/checksums.txt: signature verified (keyless, $identity, $issuer)"
  fi
fi

# --- the tool cache ---------------------------------------------------------
cache_root="${RUNNER_TOOL_CACHE:-}"
if [ -z "$cache_root" ]; then
  [ -n "${HOME:-}" ] || fail "neither RUNNER_TOOL_CACHE nor HOME is set: no tool cache to install into"
  cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/tool-cache"
fi
cache_root="$(unixpath "$cache_root")"
dest="$cache_root/ferry/${version#v}/$tcarch"
bin="$dest/$exe"
# .sha256 records, at install, the archive it came from and the binary's
# sha256: an entry is reused only for the archive this action pins and
# while the binary is unchanged (a partial or corrupted entry, or another
# build under the same version, is replaced).
record() { printf '%s  %s\n%s  %s\n' "$want" "$name" "$1" "$exe"; }

reuse=false
if [ -f "$dest.complete" ] && [ -f "$bin" ] && [ -f "$dest/.sha256" ]; then
  if [ "$(cat "$dest/.sha256")" = "$(record "$(sha256 "$bin")")" ]; then
    reuse=true
    say "reusing $dest (the tool cache's $exe matches $name)"
  else
    echo "::warning::ferry setup: $dest does not match $name of setup/checksums.txt; installing it again"
  fi
fi

if [ "$reuse" = false ]; then
  # --- download, verify, extract ------------------------------------------
  url="$base/$name"
  archive="$work/$name"
  say "downloading $(redact "$url")"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$archive" "$url" 2>"$work/download.log" \
      || fail "downloading $name from $(redact "$url"): $(lastline "$work/download.log")"
  elif command -v wget >/dev/null 2>&1; then
    wget -q --tries=3 -O "$archive" "$url" 2>"$work/download.log" \
      || fail "downloading $name from $(redact "$url"): wget failed $(lastline "$work/download.log")"
  else
    fail "neither curl nor wget is on PATH to download $name"
  fi
  got="$(sha256 "$archive")"
  if [ "$got" != "$want" ]; then
    fail "$name from $(redact "$url"): sha256 mismatch: setup/checksums.txt expects $want, got $got (a tampered or corrupted download, or a mirror serving another build)"
  fi
  say "$name: sha256 $got matches setup/checksums.txt"

  mkdir "$work/x"
  case "$ext" in
    tar.gz)
      tar -xzf "$archive" -C "$work/x" "$exe" 2>"$work/extract.log" \
        || fail "extracting $exe from $name: $(lastline "$work/extract.log")"
      ;;
    zip)
      if command -v unzip >/dev/null 2>&1; then
        unzip -q -o "$archive" "$exe" -d "$work/x" >"$work/extract.log" 2>&1 \
          || fail "extracting $exe from $name: $(lastline "$work/extract.log")"
      elif command -v powershell >/dev/null 2>&1 || command -v pwsh >/dev/null 2>&1; then
        ps=powershell
        command -v powershell >/dev/null 2>&1 || ps=pwsh
        # shellcheck disable=SC2016 # $env: is PowerShell's, read by it
        FERRY_ZIP="$(hostpath "$archive")" FERRY_OUT="$(hostpath "$work/x")" \
          "$ps" -NoProfile -NonInteractive -Command 'Expand-Archive -LiteralPath $env:FERRY_ZIP -DestinationPath $env:FERRY_OUT -Force' >"$work/extract.log" 2>&1 \
          || fail "extracting $exe from $name: $(lastline "$work/extract.log")"
      else
        fail "neither unzip nor PowerShell is on PATH to extract $name"
      fi
      ;;
  esac
  if [ ! -f "$work/x/$exe" ] || [ -L "$work/x/$exe" ]; then
    fail "$name holds no file $exe at its top level"
  fi
  chmod 0755 "$work/x/$exe"

  # --- into the tool cache: a staging folder, moved in once complete -------
  mkdir -p "$(dirname "$dest")" || fail "cannot create the tool cache folder $(dirname "$dest")"
  rm -rf "$dest" "$dest.complete"
  staging="$dest.partial.$$"
  rm -rf "$staging"
  mkdir "$staging"
  mv "$work/x/$exe" "$staging/$exe"
  record "$(sha256 "$staging/$exe")" >"$staging/.sha256"
  if ! mv "$staging" "$dest" 2>/dev/null; then
    # Another job of this runner installed it meanwhile.
    [ -f "$bin" ] || fail "cannot move the binary into the tool cache at $dest"
  fi
  staging=""
  : >"$dest.complete"
fi

# --- run it once, then PATH and outputs -------------------------------------
if ! line="$("$bin" version 2>"$work/version.log" | head -1)" || [ -z "$line" ]; then
  rm -rf "$dest" "$dest.complete"
  fail "$bin does not run on this $os/$arch runner: $(lastline "$work/version.log")"
fi
case "$line" in
  "ferry $version "*) ;;
  *)
    rm -rf "$dest" "$dest.complete"
    fail "$bin (from $name) reports '$line', not ferry $version"
    ;;
esac
[ -n "${GITHUB_PATH:-}" ] || fail "GITHUB_PATH is not set: run this as a step of an Actions job"
[ -n "${GITHUB_OUTPUT:-}" ] || fail "GITHUB_OUTPUT is not set: run this as a step of an Actions job"
printf '%s\n' "$(hostpath "$dest")" >>"$(unixpath "$GITHUB_PATH")"
{
  echo "version=$version"
  echo "path=$(hostpath "$bin")"
} >>"$(unixpath "$GITHUB_OUTPUT")"
say "$line: on PATH from $(hostpath "$dest")"
