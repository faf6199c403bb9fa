#!/usr/bin/env bash
# Marginal user instructions per HTTP/2 request (callgrind): onrush_http2::fast vs the h2-crate
# client vs h2load, 5 TLS connections x 10 streams, GET / against the built-in server.
#
#   bash crates/onrush-http2/benches/h2_cost.sh [N_SMALL] [N_LARGE]
#
# The server runs pinned to CPU 1, each client under callgrind pinned to CPU 0; per-request
# cost = (Ir(N_LARGE) - Ir(N_SMALL)) / (N_LARGE - N_SMALL), so start-up (TLS handshakes,
# runtime) cancels out. Traffic stays on 127.0.0.1; only the server started here is stopped.
set -euo pipefail
cd "$(dirname "$0")/../../.."
SMALL=${1:-2000}
LARGE=${2:-20000}
cargo build -q --release -p onrush-http2 --features reference --example h2_bench
BIN=target/release/examples/h2_bench
OUT=$(mktemp -d)
taskset -c 1 "$BIN" serve >"$OUT/port" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do [ -s "$OUT/port" ] && break; sleep 0.1; done
PORT=$(cat "$OUT/port")

ir() { # the total instructions of a callgrind output file
    grep -E '^(summary|totals):' "$1" | head -1 | awk '{print $2}'
}
measure() { # name, command... (the command takes N as its last argument placeholder @N@)
    local name=$1; shift
    local res=()
    for n in "$SMALL" "$LARGE"; do
        local cmd=("${@//@N@/$n}")
        taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$name.$n" \
            "${cmd[@]}" >/dev/null 2>"$OUT/log.$name.$n"
        res+=("$(ir "$OUT/cg.$name.$n")")
    done
    echo "$name: Ir($SMALL)=${res[0]} Ir($LARGE)=${res[1]} per request: $(( (res[1] - res[0]) / (LARGE - SMALL) ))"
}
measure fast "$BIN" fast "$PORT" @N@
measure h2crate "$BIN" h2 "$PORT" @N@
measure h2load h2load -n @N@ -c5 -m10 -t1 "https://127.0.0.1:$PORT/"
