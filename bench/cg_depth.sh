#!/bin/bash
# usage: bench/cg_depth.sh BINARY BACKEND TEST [N]   (BACKEND lmdb|leveldb; TEST a redis-benchmark -t name)
# callgrind instructions per command of one write-at-depth test (issue 19):
# frontdoor durability nosync, filled first (random keys: 200k SET -r 100000;
# lists: 200k LPUSH), counters zeroed, N commands (default 20000) at -c 10
# -P 16 -r 100000, dumped. Prints the whole process's instructions per
# command and the top functions (self). Env: CG_OUT (dir), CG_PORT.
set -u
exe=$1; be=$2; t=$3; n=${4:-20000}
out=${CG_OUT:-/tmp/cg-depth}; port=${CG_PORT:-16431}; mkdir -p $out
tag=$(basename $(dirname $exe))-$be-$t
d=$out/data-$tag; rm -rf $d $out/cg-$tag.out*; mkdir -p $d
(cd $d && exec valgrind --tool=callgrind --callgrind-out-file=$out/cg-$tag.out $exe --port $port --backend $be --durability nosync --dir $d >$out/log-$tag 2>&1) &
vp=$!
for i in $(seq 150); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.2; done
case $t in
  lpop|rpop|lpush|rpush) fill=lpush ;;
  lrange*) fill=lpush ;;
  *) fill=set ;;
esac
redis-benchmark -p $port -n 200000 -c 10 -P 16 -r 100000 -t $fill -q >/dev/null 2>&1
callgrind_control -z $vp >/dev/null
case $t in   # LRANGE alone (redis-benchmark's -t lrange_N runs N LPUSHes first)
  lrange_*) redis-benchmark -p $port -n $n -c 10 -P 16 -q lrange mylist 0 $(( ${t#lrange_} - 1 )) >/dev/null 2>&1 ;;
  *) redis-benchmark -p $port -n $n -c 10 -P 16 -r 100000 -t $t -q >/dev/null 2>&1 ;;
esac
callgrind_control -d $vp >/dev/null
kill $vp; wait $vp 2>/dev/null
f=$out/cg-$tag.out.1
tot=$(callgrind_annotate $f 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",","",$1); print $1}')
echo "$tag: $((tot / n)) instructions per command (whole process, $n commands)"
# self instructions per command, top functions (frames that were on the stack
# when the counters were zeroed show the whole run: left out)
callgrind_annotate --inclusive=no --threshold=100 --auto=no $f 2>/dev/null | grep -v '^-\|^$\|PROGRAM TOTALS' |
  sed -n '/file:function/,$p' |
  awk -v t=$tot -v nn=$n '{x=$1; gsub(",","",x); if (x+0 > 0 && x+0 < 0.9*t) printf "%8d  %s\n", x/nn, $0}' | head -${CG_TOP:-25}
