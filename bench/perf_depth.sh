#!/bin/bash
# usage: bench/perf_depth.sh BINARY BACKEND TEST [N]   (BACKEND lmdb|leveldb)
# perf record -g of frontdoor (durability nosync) during one write-at-depth
# test, filled first as bench/cg_depth.sh does (random keys: 200k SET
# -r 100000; lists: 200k LPUSH), then N requests (default 400000) at -c 50
# -P 16 -r 100000; prints the top symbols by self time (perf report
# --no-children). Time-based, so cache misses count, unlike callgrind's
# instruction counts. Env: PERF_OUT (dir), PERF_PORT, PERF_TOP.
set -u
exe=$1; be=$2; t=$3; n=${4:-400000}
out=${PERF_OUT:-/tmp/perf-depth}; port=${PERF_PORT:-16451}; mkdir -p $out
tag=$(basename $(dirname $exe))-$be-$t
d=$out/data-$tag; rm -rf $d; mkdir -p $d
$exe --port $port --backend $be --durability nosync --dir $d >$out/log-$tag 2>&1 &
fp=$!
for i in $(seq 100); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
case $t in lpop|rpop|lpush|rpush|lrange*) fill=lpush ;; *) fill=set ;; esac
redis-benchmark -p $port -n 200000 -c 50 -P 16 -r 100000 -t $fill -q >/dev/null 2>&1
perf record -g -F 2000 -o $out/perf-$tag.data -p $fp >/dev/null 2>&1 &
pp=$!
sleep 0.3
case $t in
  lrange_*) redis-benchmark -p $port -n $n -c 50 -P 16 -q lrange mylist 0 $(( ${t#lrange_} - 1 )) ;;
  *) redis-benchmark -p $port -n $n -c 50 -P 16 -r 100000 -t $t -q ;;
esac 2>&1 | tr '\r' '\n' | grep -v '^$' | tail -1
kill -INT $pp; wait $pp 2>/dev/null
kill $fp; wait $fp 2>/dev/null
perf report -i $out/perf-$tag.data --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -${PERF_TOP:-15}
