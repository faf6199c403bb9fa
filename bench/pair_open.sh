#!/usr/bin/env bash
# Two onrush builds in the open model at the same time on CPU 0, against one nginx on CPU 1
# (bench/nginx.conf, port 18080): the CPU each spends per request (user + system from
# /usr/bin/time, over its own requests) and B/A, per round. Running both at once puts the
# machine's slow stretches on both (docs/benchmarks.md, "Side by side at the same time").
# Loopback only; each round lasts SECONDS.
#
#   bench/pair_open.sh BIN_A BIN_B RATE SECONDS [ROUNDS]
set -euo pipefail
a=$1; b=$2; rate=$3; secs=$4; rounds=${5:-3}
dir=$(mktemp -d)
taskset -c 1 nginx -c "$(cd "$(dirname "$0")" && pwd)/nginx.conf" 2> /dev/null &
nginx=$!
trap 'kill $nginx 2> /dev/null || true; rm -rf "$dir"' EXIT
sleep 0.3
cat > "$dir/plan.yaml" <<EOT
target: http://127.0.0.1:18080
scenarios:
  - name: s
    load: { rate: ${rate}/s, duration: ${secs}s, max_vus: 2000 }
    steps: [ { get: / } ]
EOT
for _ in $(seq "$rounds"); do
  rm -rf "$dir/A" "$dir/B"
  pids=()
  for x in A B; do
    bin=$a; [ "$x" = B ] && bin=$b
    /usr/bin/time -f "%U %S" -o "$dir/$x.time" taskset -c 0 "$bin" run "$dir/plan.yaml" -t 1 -q \
      --out "$dir/$x" > /dev/null 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || true
  DIR=$dir python3 - <<'EOT'
import json, os
d = os.environ["DIR"]
def cost(x):
    s = json.load(open(f"{d}/{x}/summary.json"))["totals"]
    user, system = map(float, open(f"{d}/{x}.time").read().split())
    return (user + system) * 1e6 / max(1, s["requests"]), s["requests"], s["dropped_iterations"], s["schedule_lag_ms"]["p99"]
a, b = cost("A"), cost("B")
print(f"A {a[0]:.2f} us/req ({a[1]} req, {a[2]} dropped, lag p99 {a[3]} ms) | "
      f"B {b[0]:.2f} us/req ({b[1]} req, {b[2]} dropped, lag p99 {b[3]} ms) | B/A {b[0] / a[0]:.3f}")
EOT
done
