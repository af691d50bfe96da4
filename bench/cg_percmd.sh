#!/bin/bash
# usage: bench/cg_percmd.sh OLD_BINARY NEW_BINARY  (then: python3 bench/cg_own.py [dir])
# callgrind counts of one binary against another in one run: LMDB nosync,
# keys filled, counters zeroed, 20000 GET / SET at -P 1 and 16, dumped.
# callgrind: frontdoor's own instructions per command, base vs new, one run.
# CG_TESTS: the redis-benchmark tests to count (default "get set").
# CG_ARGS: more frontdoor arguments (e.g. "--backend redis --redis-address
# 127.0.0.1:6379" for the redis backend: docs/benchmarks.md).
set -u
extra=${CG_ARGS:-}
out=${CG_OUT:-/tmp/cg-percmd}; port=${CG_PORT:-16411}; mkdir -p $out
for bin in "base:$1" "new:$2"; do
  tag=${bin%%:*}; exe=${bin#*:}
  for t in ${CG_TESTS:-get set}; do for P in 1 16; do
    d=$out/data-$tag-$t-$P; rm -rf $d; mkdir -p $d
    (cd $d && exec valgrind --tool=callgrind --callgrind-out-file=$out/cg-$tag-$t-$P.%p $exe --port $port --durability nosync --dir $d $extra >$out/log-$tag-$t-$P 2>&1) &
    vp=$!
    for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.2; done
    redis-benchmark -p $port -n 5000 -c 10 -r 1000 -t set,get,$t -q >/dev/null 2>&1   # warm-up, fills the keys
    callgrind_control -z $vp >/dev/null
    redis-benchmark -p $port -n 20000 -c 10 -r 1000 -t $t -P $P -q >/dev/null 2>&1
    callgrind_control -d $vp >/dev/null
    kill $vp; wait $vp
  done; done
done
