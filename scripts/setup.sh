#!/bin/bash
# Installs what clusterbench needs on Debian, as root: the servers and tools from Debian's packages,
# the Python package with pinned dependencies, the sysbench reconnect shim and our Go helpers.
# Usage: scripts/setup.sh [--test] [--no-rootfs]
#   --test adds what the test suite needs (chromium, promtool from prometheus); --no-rootfs skips the MySQL root file system
#   that only Group Replication needs (`make demo` runs Galera and does without it).
set -euo pipefail

TEST=""
ROOTFS=1
for arg in "$@"; do
  case "$arg" in
    --test) TEST=1 ;;
    --no-rootfs) ROOTFS="" ;;
    *) echo "error: unknown option $arg; use --test or --no-rootfs" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" != 0 ]; then
  echo "error: setup installs Debian packages and needs root; run it as root (e.g. sudo make setup)" >&2
  exit 2
fi

PKGS="mariadb-server mariadb-client galera-4 haproxy sysbench iproute2 keepalived rsync mariadb-backup socat
      iptables libmariadb-dev gcc libc6-dev procps openssl openssh-server openssh-client debootstrap
      nginx php8.2-fpm php8.2-mysql php8.2-cli curl faketime"
if [ -n "$TEST" ]; then
  PKGS="$PKGS chromium prometheus"   # prometheus: promtool checks the OpenMetrics export
fi

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  echo "installing Debian packages:$missing"
  # Debian's maintainer scripts would start mariadb, haproxy, keepalived, nginx and php-fpm on the
  # host (mariadb on 127.0.0.1:3306, nginx on :80). clusterbench starts its own processes in
  # namespaces, so forbid that for the duration of the install unless the machine already has a policy.
  cleanup_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    cleanup_policy=1
  fi
  trap '[ -n "$cleanup_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing >/dev/null
  echo "Debian packages installed"
fi

PY=${PYTHON:-python3}
if ! $PY -c "import clusterbench, typer, pytest, ruff" >/dev/null 2>&1 || [ pyproject.toml -nt .setup-stamp ]; then
  echo "installing the clusterbench Python package and its pinned dependencies"
  $PY -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[dev]'
  touch .setup-stamp
fi

# The LD_PRELOAD fix for sysbench's reconnect crash (upstream issue 527), built from our source.
$PY -c "from pathlib import Path; from clusterbench.cluster import home_dir; from clusterbench.workloads import build_shim; print('sysbench shim:', build_shim(home_dir() / 'lib'))"

# Helper programs built with Go: cb-faultfs, the FUSE layer for power loss and disk faults, and
# cb-delayline, the NFQUEUE delay line for delay-link and loss-link on kernels without netem (from
# our sources); vegeta for HTTP load (the pinned release). Only when missing or changed. If one
# cannot be built this says why and carries on; what needs it then refuses in one line.
bash "$(dirname "$0")/build-tools.sh" --soft || true

# MySQL Group Replication runs from a root file system of Debian's unstable suite (Debian 12 has
# no MySQL), built once with debootstrap and reused (/var/lib/clusterbench/rootfs/mysql, or
# $CLUSTERBENCH_ROOTFS). If it cannot be built today this says why in one line and carries on:
# only the Group Replication tests need it, and they are then skipped with that reason.
if [ -n "$ROOTFS" ]; then
  $PY -m clusterbench rootfs build --soft || echo "warning: the Group Replication rootfs was not built (see above); Group Replication tests will be skipped"
fi
