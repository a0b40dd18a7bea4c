#!/bin/bash
# Builds clusterbench's helper programs from this tree into /var/lib/clusterbench/bin (or
# $CLUSTERBENCH_BIN), each only when it is missing or its sources changed. Needs Go and the Go
# module proxy (for the pinned modules in each tool's go.sum); nothing else from outside.
# Usage: scripts/build-tools.sh [--soft]   (--soft: say why a tool was not built, and go on)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${CLUSTERBENCH_BIN:-/var/lib/clusterbench/bin}
SOFT=""
[ "${1:-}" = "--soft" ] && SOFT=1

# Go from PATH, else the usual install place, else Debian's package (1.19 is enough).
find_go() {
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go >/dev/null 2>&1 || true
    if command -v go >/dev/null 2>&1; then command -v go; return; fi
  fi
  return 1
}

# A digest of a tool's sources: its .go files, go.mod and go.sum.
src_digest() {
  (cd "$1" && find . -maxdepth 1 \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' \
    | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}

# build_tool NAME SOURCE_DIR: go build into $BIN_DIR/NAME unless the recorded digest matches.
build_tool() {
  local name=$1 src=$2 out="$BIN_DIR/$1" digest go
  digest=$(src_digest "$src")
  if [ -x "$out" ] && [ "$(cat "$out.src-sha256" 2>/dev/null)" = "$digest" ]; then
    echo "$name: up to date ($out)"
    return 0
  fi
  if ! go=$(find_go); then
    echo "error: $name needs Go to build (none on PATH, in /usr/local/go, or from apt-get)" >&2
    return 1
  fi
  mkdir -p "$BIN_DIR"
  echo "$name: building with $($go version | cut -d' ' -f3)"
  # Only the module proxy; -mod=readonly: go.sum must already pin every module.
  if ! (cd "$src" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0 \
        "$go" build -trimpath -ldflags=-s -o "$out.tmp" .); then
    rm -f "$out.tmp"
    echo "error: $name did not build (see above)" >&2
    return 1
  fi
  mv -f "$out.tmp" "$out"
  echo "$digest" > "$out.src-sha256"
  echo "$name: built $out"
}

# The NFQUEUE delay line behind delay-link and loss-link where the kernel has no netem.
build_delayline() {
  build_tool cb-delayline "$ROOT/tools/delayline"
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
  build_delayline || failed=1
  build_vegeta || failed=1
  if [ "$failed" = 1 ] && [ -z "$SOFT" ]; then
    exit 1
  fi
  if [ "$failed" = 1 ]; then
    echo "warning: a helper was not built; the faults or loads that need it will say so and refuse" >&2
  fi
}

# Sourcing this file (to call build_delayline or build_vegeta alone) does not run main.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
