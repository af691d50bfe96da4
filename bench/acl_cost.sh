#!/bin/bash
# Usage: bench/acl_cost.sh build/frontdoor <frontdoor built before ACL> [rounds] [requests]
# (docs/benchmarks.md, "ACL users (issue 29)"). Servers on free loopback ports.
# Server CPU time per command (user+system, /proc/<pid>/stat), redis-benchmark
# -P 16 -c 10 -r 100000, rounds interleaved. $1 new frontdoor, $2 base frontdoor.
FD_NEW=$1; FD_OLD=$2; ROUNDS=${3:-3}; N=${4:-400000}
port() { /usr/bin/python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"; }
RULES='on >pw ~a0:* ~a1:* ~a2:* ~a3:* ~a4:* ~a5:* ~a6:* ~a7:* ~a8:* ~key:* +@all'
PN=$(port); PO=$(port); PR=$(port); D=$(mktemp -d)
$FD_NEW --port $PN --dir $D/new --durability nosync >$D/new.log 2>&1 & NEWPID=$!
$FD_OLD --port $PO --dir $D/old --durability nosync >$D/old.log 2>&1 & OLDPID=$!
redis-server --port $PR --save '' --appendonly no >$D/r.log 2>&1 & RPID=$!
sleep 1
redis-cli -p $PN acl setuser bench $RULES >/dev/null; redis-cli -p $PR acl setuser bench $RULES >/dev/null
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
m() { # pid port test [auth]
  local t0=$(ticks $1)
  local rps=$(redis-benchmark -p $2 ${@:4} -P 16 -c 10 -t $3 -n $N -r 100000 -q 2>/dev/null | tr '\r' '\n' | grep 'requests per second' | awk '{print $2}')
  local t1=$(ticks $1)
  awk -v a=$t0 -v b=$t1 -v n=$N -v r=$rps 'BEGIN{printf "%6.3f us/cmd (%8.0f rps)  ", (b-a)*10000.0/n, r}'
}
for t in get set; do
for i in $(seq $ROUNDS); do
  echo "$t round $i"
  echo "  frontdoor before ACL, default:    $(m $OLDPID $PO $t)"
  echo "  frontdoor with ACL, default:      $(m $NEWPID $PN $t)"
  echo "  frontdoor with ACL, 10 patterns:  $(m $NEWPID $PN $t --user bench -a pw)"
  echo "  redis-server 7.0.15, default:     $(m $RPID $PR $t)"
  echo "  redis-server 7.0.15, 10 patterns: $(m $RPID $PR $t --user bench -a pw)"
done; done
kill $NEWPID $OLDPID $RPID; wait 2>/dev/null; rm -rf $D
