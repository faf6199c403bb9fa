#!/usr/bin/env bash
# The worker thread's user-space instructions per request (callgrind --separate-threads=yes),
# marginal between a short and a long run so that start-up and shutdown cancel out; the
# worker's figure, unlike the whole process's, does not carry the main thread's once-a-second
# work (which valgrind's slowness spreads over few requests). Compare builds in one session:
#
#   bench/worker_instructions.sh keepalive|new_connection BINARY [BINARY...]
#
# keepalive: `onrush quick -c 50 -t 1`, 2,000 vs 20,000 requests. new_connection: 50 VUs,
# `connections: per_request` (the server closes first), 1,000 vs 6,000 requests.
# `onrush serve --threads 1` on the last CPU, the tool on CPU 0; loopback only, bounded.
set -euo pipefail
case=$1; shift
last=$(( $(nproc) - 1 ))

worker() { # callgrind output prefix -> the largest thread's total (the worker's)
  for f in "$1"-*; do grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}'; done | sort -n | tail -1
}

count() { # BINARY REQUESTS DIR -> instructions of the worker thread
  local bin=$1 n=$2 dir=$3
  if [ "$case" = keepalive ]; then
    taskset -c 0 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg.$n" \
      "$bin" quick "http://$addr/" -c 50 -t 1 -n "$n" --out "$dir/r$n" -q > /dev/null 2> "$dir/err.$n"
  else
    cat > "$dir/plan$n.yaml" <<EOT
target: http://$addr
http: { connections: per_request }
scenarios:
  - name: new_connection
    load: { vus: 50, shared_iterations: $n }
    steps: [ { get: / } ]
EOT
    taskset -c 0 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg.$n" \
      "$bin" run "$dir/plan$n.yaml" -t 1 --out "$dir/r$n" -q > /dev/null 2> "$dir/err.$n"
  fi
  worker "$dir/cg.$n"
}

case $case in
  keepalive) short=2000; long=20000 ;;
  new_connection) short=1000; long=6000 ;;
  *) echo "usage: $0 keepalive|new_connection BINARY [BINARY...]" >&2; exit 2 ;;
esac
for bin in "$@"; do
  dir=$(mktemp -d)
  taskset -c "$last" "$bin" serve --addr 127.0.0.1:0 --threads 1 2> "$dir/serve" &
  server=$!
  addr=""
  for _ in $(seq 50); do
    addr=$(grep -o '127.0.0.1:[0-9]*' "$dir/serve" | head -1 || true)
    [ -n "$addr" ] && break
    sleep 0.1
  done
  i1=$(count "$bin" $short "$dir"); i2=$(count "$bin" $long "$dir")
  kill "$server"; wait "$server" 2> /dev/null || true
  rm -rf "$dir"
  echo "$case $bin: $(( (i2 - i1) / (long - short) )) instructions/request (worker thread)"
done
