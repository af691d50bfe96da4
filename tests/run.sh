#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine:
# installs what is missing, builds, runs every test (ctest), gives the
# parser's fuzzer a short run, then rebuilds with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs the suite again (its summary ends the
# output).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup-debian.sh --test
jobs=$(nproc)
# ctest runs 3 tests at once: most of a test's time is waiting (servers
# starting, timeouts, sleeps), and each has its own ports and temp dirs;
# the ones that measure time or load both cores are RUN_SERIAL
# (tests/CMakeLists.txt). 2 cores: 13.5 min serial, 6 min so.
ctest_jobs=${FD_CTEST_JOBS:-3}
# the setup above installed every prerequisite: a test that finds one missing
# (module, server, backend not built in) fails instead of skipping
export FD_REQUIRE_PREREQS=1

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j"$ctest_jobs"

if command -v clang >/dev/null; then
  echo "== fuzz the RESP parser (libFuzzer, 30 s)"
  cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DFRONTDOOR_FUZZ=ON -DFRONTDOOR_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_resp
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp tests/fuzz/corpus/* "$work"/
  ./build-fuzz/fuzz_resp -max_total_time=30 -print_final_stats=1 "$work" 2>&1 | tail -n 3
fi

echo "== build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFRONTDOOR_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under sanitizers"
# The same suite minus the re-runs of the shared suites on other backends and
# the bench's report check: their C code paths are the ones the direct tests
# (test_kv_types on LevelDB, test_leveldb_async, test_redis_backend,
# test_mongodb, test_cluster, test_ab) already run under the sanitizers, and they would double
# the time of this pass. Except the MongoDB backend's differential: mongodb.c
# has its own implementation of every command, which only that suite runs in
# full (its time is the Python emulator's, not the sanitizers'). The
# "mongodb-big" variant (the same suites on per-member documents) runs once,
# in the pass above; under the sanitizers storage/mongodb/mg_big.c is run by
# test_mongodb_big (conversion of every type under a pipeline, the hot
# paths on the big layout, cleanup).
# test_crash runs once too: it kill -9s the servers (LeakSanitizer never
# reports on them) and what it checks, that nothing acknowledged is lost, is
# the same code in both builds.
# The command fuzzer runs on every backend here too (issue 25: under the
# sanitizers, with its address-space cap), plus its memory bound's check
# (tests/fuzz/cmdfuzz).
# The harness stops sanitized servers with SIGTERM, not SIGKILL, so that
# LeakSanitizer's exit-time report is seen (fdtest.stop_sanitized).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$ctest_jobs" \
    -E '^integration\.(leveldb|redis|redis-cluster|mongodb-big)\.|^integration\.mongodb\.test_(tools|server)$|test_bench$|^integration\.test_crash$'

