#!/bin/bash
# Builds clusterbench's helper programs from this tree's tools/ into /var/lib/clusterbench/bin (or
# $CLUSTERBENCH_BIN), where the Python side finds them, each only when it is missing or its sources
# (or the Go version) changed. Needs Go; the first build of a tool fetches the modules its go.sum
# pins from the Go module proxy, later builds use Go's module cache.
# Usage: scripts/build-tools.sh [--soft]   (--soft: say why a tool was not built, and go on)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${CLUSTERBENCH_BIN:-/var/lib/clusterbench/bin}
SOFT=""
[ "${1:-}" = "--soft" ] && SOFT=1

# Go keeps its caches under $HOME; a service or CI environment may have none set.
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  export HOME
fi

# Go from PATH, else where the Go project's archive installs it.
find_go() {
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  return 1
}

# What a tool's binary depends on: the Go version, its .go files (not tests), go.mod and go.sum.
src_digest() {
  local go=$1 src=$2
  ("$go" env GOVERSION
   cd "$src" && find . -maxdepth 1 \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' \
     | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -d' ' -f1
}

# build_tool NAME SOURCE_DIR MIN_GO_MINOR: go build into $BIN_DIR/NAME unless the recorded digest
# matches.
build_tool() {
  local name=$1 src=$2 min=$3 out="$BIN_DIR/$1" go version minor digest
  if ! go=$(find_go); then
    echo "error: $name needs Go 1.$min or newer to build and there is none (not on PATH nor in /usr/local/go); install it and run scripts/build-tools.sh" >&2
    return 1
  fi
  version=$("$go" env GOVERSION)
  minor=$(echo "$version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  if [ -z "$minor" ] || [ "$minor" -lt "$min" ]; then
    echo "error: $name needs Go 1.$min or newer and $go is $version; install a newer Go and run scripts/build-tools.sh" >&2
    return 1
  fi
  digest=$(src_digest "$go" "$src")
  if [ -x "$out" ] && [ "$(cat "$out.src-sha256" 2>/dev/null)" = "$digest" ]; then
    echo "$name: up to date ($out)"
    return 0
  fi
  mkdir -p "$BIN_DIR"
  echo "$name: building with $version"
  # -mod=readonly: go.sum must already pin every module; GOTOOLCHAIN=local: no toolchain download.
  if ! (cd "$src" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0 \
        "$go" build -trimpath -o "$out.tmp" .); then
    rm -f "$out.tmp"
    echo "error: $name did not build (see above); its first build needs the Go module proxy" >&2
    return 1
  fi
  mv -f "$out.tmp" "$out"
  echo "$digest" > "$out.src-sha256"
  echo "$name: built $out"
}

# The FUSE layer under a node's datadir for power loss and disk faults (go-fuse needs Go 1.21, our
# code 1.22).
build_faultfs() {
  build_tool cb-faultfs "$ROOT/tools/faultfs" 22
}

# The NFQUEUE delay line behind delay-link and loss-link where the kernel has no netem.
build_delayline() {
  build_tool cb-delayline "$ROOT/tools/delayline" 19
}

# vegeta, the open-loop HTTP load generator of the web tier's load (workloads/http.py): the pinned
# release, `go install`ed from the Go module proxy (checked against the checksum database) into
# $BIN_DIR, only when it is missing or another version. Self-contained: it finds Go itself.
VEGETA_MODULE=github.com/tsenart/vegeta/v12
VEGETA_VERSION=v12.13.0
build_vegeta() {
  local out="$BIN_DIR/vegeta" go tmp home
  if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$VEGETA_VERSION" ]; then
    echo "vegeta: up to date ($out, $VEGETA_VERSION)"
    return 0
  fi
  go=$(command -v go 2>/dev/null || true)
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then
    echo "error: vegeta is built with Go and there is none (not on PATH nor in /usr/local/go); install Go and run scripts/build-tools.sh" >&2
    return 1
  fi
  # Go keeps its module and build caches under $HOME, which a service or CI shell may not set.
  home=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
  mkdir -p "$BIN_DIR"
  tmp=$(mktemp -d)
  echo "vegeta: go install $VEGETA_MODULE@$VEGETA_VERSION with $("$go" env GOVERSION)"
  if ! HOME="$home" GOBIN="$tmp" GOTOOLCHAIN=local CGO_ENABLED=0 "$go" install -trimpath \
       "$VEGETA_MODULE@$VEGETA_VERSION"; then
    rm -rf "$tmp"
    echo "error: vegeta did not build (see above); it needs the Go module proxy" >&2
    return 1
  fi
  mv -f "$tmp/vegeta" "$out"
  rm -rf "$tmp"
  echo "$VEGETA_VERSION" > "$out.version"
  echo "vegeta: installed $out"
}

main() {
  local failed=0
  build_faultfs || failed=1
  build_delayline || failed=1
  build_vegeta || failed=1
  if [ "$failed" = 1 ] && [ -z "$SOFT" ]; then
    exit 1
  fi
  if [ "$failed" = 1 ]; then
    echo "warning: a helper was not built; the faults or loads that need it will say so and refuse" >&2
  fi
}

# Sourcing this file (to call one build_* function alone, e.g. build_vegeta) does not run main.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
