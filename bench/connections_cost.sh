#!/bin/bash
# CPU µs per request of a closed keep-alive loop on C connections, for each C given: what a
# cold connection costs beside a warm one (docs/benchmarks.md, "What remains at 60,000/s").
# The tool on CPU 0 (one worker), `onrush serve --threads 1` on CPU 1; 4 s per run; loopback.
#   bench/connections_cost.sh [-b BINARY] 50 3000 50 3000
set -euo pipefail
B=target/release/onrush
if [ "${1:-}" = "-b" ]; then B=$2; shift 2; fi
work=$(mktemp -d)
taskset -c 1 "$B" serve --addr 127.0.0.1:0 --threads 1 >"$work/serve.out" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  addr=$(grep -o '127\.0\.0\.1:[0-9]*' "$work/serve.out" | head -1 || true)
  [ -n "$addr" ] && break
  sleep 0.1
done
for c in "$@"; do
  rm -rf "$work/out"
  /usr/bin/time -f "%U %S" -o "$work/time" taskset -c 0 "$B" quick "http://$addr/" -c "$c" -t 1 -d 4s --quiet --out "$work/out" >/dev/null 2>&1
  python3 - "$c" "$work" <<'PY'
import json, sys
c, work = sys.argv[1], sys.argv[2]
n = json.load(open(f"{work}/out/summary.json"))["totals"]["requests"]
u, s = map(float, open(f"{work}/time").read().split())
print(f"connections {c:>6}  requests {n:>8}  CPU {(u + s) * 1e6 / n:6.2f} us/req  user {u * 1e6 / n:5.2f}  system {s * 1e6 / n:5.2f}")
PY
done
