#!/bin/bash
# Usage: bench/tracking_cg.sh build/frontdoor [redis-server]
# (docs/benchmarks.md, "Client-side caching and FCALL (issue 27)").
# callgrind, whole process, deterministic: instructions per command of the
# server (frontdoor: LMDB nosync; redis-server 7.0.15) for 20000 GET / SET at
# -c 10 -P 16 -r 100000, with no tracking client, with the "default" and
# "bcast" tracking clients of bench/tracking_cost.sh (started and ready
# before the counters are zeroed).
set -u
FD=$1; RS=${2:-redis-server}
HERE=$(dirname "$0"); out=$(mktemp -d)
. "$HERE"/tracking_lib.sh
total() { callgrind_annotate --threshold=100 --auto=no "$1" 2>/dev/null | grep 'PROGRAM TOTALS' | awk '{gsub(",","",$1); print $1}'; }
printf "%-13s %-5s %-8s %10s\n" server test mode "instr/cmd"
for srv in frontdoor redis-server; do
  for t in get set; do for mode in none default bcast; do
    [ $t = get ] && [ $mode = bcast ] && continue
    p=$(port); d=$out/d-$srv-$t-$mode; mkdir -p $d
    if [ $srv = frontdoor ]; then
      (cd $d && exec valgrind --tool=callgrind --callgrind-out-file=$out/cg-$srv-$t-$mode.%p $FD --port $p --durability nosync --dir $d >$d/log 2>&1) &
    else
      (cd $d && exec valgrind --tool=callgrind --callgrind-out-file=$out/cg-$srv-$t-$mode.%p $RS --port $p --save '' --appendonly no >$d/log 2>&1) &
    fi
    vp=$!
    for i in $(seq 150); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.2; done
    redis-benchmark -p $p -n 5000 -c 10 -r 100000 -t set,get -q >/dev/null 2>&1   # warm-up
    start_trackers $p $mode $out/ready; tp=$TRACKERS
    callgrind_control -z $vp >/dev/null
    redis-benchmark -p $p -n 20000 -c 10 -r 100000 -t $t -P 16 -q >/dev/null 2>&1
    sleep 0.5
    callgrind_control -d $vp >/dev/null
    if [ -n "$tp" ]; then kill $tp; wait $tp 2>/dev/null; fi
    kill $vp; wait $vp 2>/dev/null
    f=$(ls $out/cg-$srv-$t-$mode.*.1 2>/dev/null | head -1)
    printf "%-13s %-5s %-8s %10.0f\n" $srv $t $mode $(echo "$(total $f) / 20000" | bc -l)
  done; done
done
cat $out/ready.log
rm -rf $out
