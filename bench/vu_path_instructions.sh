#!/usr/bin/env bash
# Instructions per keep-alive request on the VU path (callgrind, collection switched on only
# inside Vu::run_iteration: the program, rendering, the exchange's user-space side, extractors,
# metrics; not the scheduler and epoll around it). The marginal count between a 2,000 and a
# 20,000-request run, so start-up and shutdown cancel out. Compare builds in one session:
#
#   bench/vu_path_instructions.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# onrush serve --threads 1 on the last CPU, onrush quick -c 50 -t 1 on CPU 0; loopback only.
set -euo pipefail
last=$(( $(nproc) - 1 ))

count() { # BINARY REQUESTS -> "instructions requests"
  local bin=$1 n=$2 dir; dir=$(mktemp -d)
  taskset -c "$last" "$bin" serve --addr 127.0.0.1:0 --threads 1 2> "$dir/serve" &
  local server=$!
  local addr=""
  for _ in $(seq 50); do
    addr=$(grep -o '127.0.0.1:[0-9]*' "$dir/serve" | head -1 || true)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  taskset -c 0 valgrind --tool=callgrind --toggle-collect='*run_iteration*' \
    --callgrind-out-file="$dir/cg" "$bin" quick "http://$addr/" -c 50 -t 1 -n "$n" \
    --out "$dir/r" --json > /dev/null 2> "$dir/err"
  kill "$server"; wait "$server" 2> /dev/null || true
  local total requests
  total=$(grep -E '^(summary|totals):' "$dir/cg" | head -1 | awk '{print $2}')
  requests=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['totals']['requests'])" "$dir/r/summary.json")
  rm -rf "$dir"
  echo "$total $requests"
}

rounds=${3:-2}
for round in $(seq "$rounds"); do
  for bin in "$1" "$2"; do
    read -r i1 n1 < <(count "$bin" 2000)
    read -r i2 n2 < <(count "$bin" 20000)
    echo "round $round $bin: $(( (i2 - i1) / (n2 - n1) )) instructions/request on the VU path"
  done
done
