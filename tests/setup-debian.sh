#!/usr/bin/env bash
# Installs what frontdoor needs on Debian 12, and only what is missing.
#   bash tests/setup-debian.sh          build + run dependencies
#   bash tests/setup-debian.sh --test   also what the test suite and bench use
set -euo pipefail

pkgs=(cmake make gcc pkg-config libev-dev liblmdb-dev libleveldb-dev libmongoc-dev liblua5.1-0-dev lua-cjson-dev lua-bitop-dev libhiredis-dev libssl-dev)
if [ "${1:-}" = "--test" ]; then
  # redis-server: the differential oracle; redis-tools: redis-benchmark/redis-cli;
  # clang + libclang-rt: the parser's libFuzzer target
  # python3-mockupdb + python3-mongomock: the MongoDB test server (tests/mongo/server.py)
  # python3-jsonschema: an oracle for bench's results.json besides bench's own validator
  # python3-fusepy: crashfs.py, the disk that forgets unsynced data (test_crash's power_loss_*)
  # python3-redis, python3-rq, python3-limits, python3-kombu, nodejs + npm: test_apps.py (the client libraries
  # applications use; the node ones come from npm into tests/apps/node_modules, below)
  # python3-prometheus-client: its text parser reads the metrics endpoint (test_metrics.py)
  pkgs+=(redis-server redis-tools python3 clang libclang-rt-14-dev procps python3-mockupdb python3-mongomock
         python3-fusepy python3-jsonschema python3-redis python3-rq python3-limits python3-kombu python3-prometheus-client)
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi

# test_apps.py's node libraries (tests/apps/package.json, pinned by its package-lock.json)
node_apps() {
  [ "${1:-}" = "--test" ] || return 0
  local apps
  apps="$(cd "$(dirname "$0")" && pwd)/apps"
  [ -d "$apps/node_modules" ] && [ "$apps/node_modules/.package-lock.json" -nt "$apps/package-lock.json" ] && return 0
  echo "installing the node libraries of tests/apps (npm ci)"
  (cd "$apps" && npm ci --no-audit --no-fund --loglevel=error)
}
trap 'node_apps "${1:-}"' EXIT

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's redis-server package starts a system service on 6379 where it can;
# frontdoor's tests never use it (they start their own on free ports).
