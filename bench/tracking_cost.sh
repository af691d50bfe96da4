#!/bin/bash
# Usage: bench/tracking_cost.sh build/frontdoor [rounds] [requests]
# (docs/benchmarks.md, "Client-side caching and FCALL (issue 27)"). frontdoor
# (lmdb, durability nosync) and redis-server 7.0.15 on free loopback ports,
# redis-benchmark -P 16 -c 50 -r 100000, rounds interleaved (frontdoor, then
# redis-server, for each test of each round); per run the server's
# throughput and its CPU time per command (user + system, /proc/<pid>/stat,
# 10 ms ticks), which the other load on the machine disturbs less. Tracking
# clients (bench/tracking_clients.py, one process per run, started before):
# "default" = 10 RESP3 clients in the default mode that have read the whole
# key space (100000 keys in the table, each invalidated by its first SET);
# "bcast" = 2 RESP3 clients in BCAST PREFIX key: (every SET of the run is
# broadcast to both). FCALL: a trivial function (return 1).
FD=$1; ROUNDS=${2:-3}; N=${3:-300000}
HERE=$(dirname "$0")
. "$HERE"/tracking_lib.sh
PF=$(port); PR=$(port); D=$(mktemp -d)
$FD --port $PF --dir $D/fd --durability nosync >$D/fd.log 2>&1 & FPID=$!
redis-server --port $PR --save '' --appendonly no >$D/r.log 2>&1 & RPID=$!
sleep 1
LIB='#!lua name=benchlib
redis.register_function("f", function(keys, args) return 1 end)'
for p in $PF $PR; do redis-cli -p $p FUNCTION LOAD REPLACE "$LIB" >/dev/null; done
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
rps() { redis-benchmark -p $1 -P 16 -c 50 -n $N -r 100000 -q "${@:2}" 2>/dev/null | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}'; }
run() { # pid port mode benchmark-args... -> "rps us/cmd"
  local pid=$1 p=$2 mode=$3 tp; shift 3
  start_trackers $p $mode $D/ready; tp=$TRACKERS
  local t0=$(ticks $pid)
  local r=$(rps $p "$@")
  local t1=$(ticks $pid)
  if [ -n "$tp" ]; then kill $tp; wait $tp 2>/dev/null; fi
  awk -v r="$r" -v a=$t0 -v b=$t1 -v n=$N 'BEGIN{printf "%9.0f %6.3f", r, (b-a)*10000.0/n}'
}
line() { # test mode round "rps us" "rps us"
  echo "$4 $5" | awk -v t="$1" -v m=$2 -v i=$3 '{printf "%-10s %-8s %5d  %9.0f %6.3f  %9.0f %6.3f   %5.2f  %5.2f\n", t, m, i, $1, $2, $3, $4, $1/$3, ($2>0?$4/$2:0)}'
}
echo "test       mode     round  frontdoor rps us/cmd  redis-server rps us/cmd  ratio rps  ratio cpu (redis/fd)"
for i in $(seq $ROUNDS); do
  for t in get set; do for mode in none default bcast; do
    [ $t = get ] && [ $mode = bcast ] && continue
    line $t $mode $i "$(run $FPID $PF $mode -t $t)" "$(run $RPID $PR $mode -t $t)"
  done; done
  line FCALL none $i "$(run $FPID $PF none FCALL f 0)" "$(run $RPID $PR none FCALL f 0)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
tail -4 $D/ready.log
kill $FPID $RPID; wait 2>/dev/null; rm -rf $D
