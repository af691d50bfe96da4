# bench/tracking_lib.sh — sourced by bench/tracking_cost.sh and
# bench/tracking_cg.sh: what both need.
#   port                  a free loopback port
#   start_trackers P M R  start the tracking clients of mode M (none,
#                         default, bcast: see tracking_cost.sh) against port
#                         P and wait until they are ready (file R); sets
#                         TRACKERS to their pid ("" for none). Their stderr
#                         goes to R.log.
port() { /usr/bin/python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"; }
start_trackers() {
  local p=$1 mode=$2 ready=$3
  TRACKERS=""
  rm -f "$ready"
  case $mode in
    default) /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")"/tracking_clients.py $p 10 100000 "$ready" 2>>"$ready.log" & TRACKERS=$!;;
    bcast) /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")"/tracking_clients.py $p 2 100000 "$ready" BCAST PREFIX key: 2>>"$ready.log" & TRACKERS=$!;;
  esac
  if [ -n "$TRACKERS" ]; then while [ ! -e "$ready" ]; do sleep 0.1; done; fi
}
