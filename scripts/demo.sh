#!/bin/bash
# The demo (`make demo`, as root): bring up a 3-node MariaDB Galera cluster behind HAProxy, run the
# eleven sysbench tests against it through the balancer, write a Markdown + HTML report, and take
# the cluster down again (always: also on failure and Ctrl-C). Takes about 2 minutes.
# Results go to the default store, <home>/results.db (home: $CLUSTERBENCH_HOME or /var/lib/clusterbench).
set -euo pipefail

CB=${CLUSTERBENCH:-clusterbench}
NAME=lab
SECONDS_PER_TEST=${DEMO_TIME:-5}

if [ "$(id -u)" != 0 ]; then
  echo "error: the demo creates network namespaces and needs root; run it as root (e.g. sudo make demo)" >&2
  exit 2
fi

started=$(date +%s)

# `up` refuses a cluster that is already up, with its own message; then nothing of ours exists
# and the trap below is not set yet, so somebody else's cluster is left alone.
$CB up

cleanup() {
  rc=$?
  trap - EXIT INT TERM
  echo
  $CB down -n "$NAME" || rc=$?
  echo "demo finished in $(( $(date +%s) - started )) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo
$CB suite -n "$NAME" --duration "$SECONDS_PER_TEST" --threads 4 --tables 4 --table-size 10000
echo
$CB report last
