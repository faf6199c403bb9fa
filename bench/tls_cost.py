#!/usr/bin/env python3
"""CPU microseconds per HTTPS request: onrush vs h2load and wrk on the same endpoint, in one run.

`onrush serve --tls --threads 1` (HTTP/1.1 and HTTP/2 by ALPN) on CPU 1, every tool on CPU 0,
one thread each. Cases, interleaved round by round so that a noisy neighbour hits every tool alike:

  keepalive  HTTP/1.1, 50 keep-alive connections   onrush per_vu          | h2load --h1 -c50 | wrk -c50
  full       a new connection + full handshake      onrush per_request full | wrk -c50 -H 'Connection: close'
             per request
  resumed    a new connection + resumed handshake   onrush per_request resume (no other tool resumes)
  h2         HTTP/2, 5 connections x 10 streams     onrush version h2, shared, max_streams 10, 50 VUs
                                                    | h2load -c5 -m10

CPU = user + system time of the tool's process (getrusage of the child). Medians of --rounds.

  full_verified, resumed_verified   the same two with the certificate verified against the server's CA
             (the default configuration; `insecure: true` elsewhere, as wrk and h2load verify nothing)

  full_p256, resumed_p256   key exchange on P-256 instead of X25519 (`kx_groups: [secp256r1]`)
  full_12, resumed_12       TLS 1.2 only (`versions: "1.2"`): its resumption skips the key exchange

usage: bench/tls_cost.py [--rounds 3] [--seconds 5] [--onrush PATH]
                         [--cases keepalive,full,resumed,h2,full_verified,resumed_verified,
                                  full_p256,resumed_p256,full_12,resumed_12]
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_per_request import ONRUSH, cpu_of  # noqa: E402

ADDR = "127.0.0.1:18443"
URL = f"https://{ADDR}/"
PLAN = """target: https://{addr}
http: {{ version: {version}, connections: {scope}, max_streams: 10, tls: {{ session: {session}, {trust}{extra} }} }}
scenarios:
  - name: tls
    load: {{ vus: 50, duration: {seconds}s }}
    steps: [ {{ get: / }} ]
"""
ONRUSH_CASES = {
    "keepalive": ("h1", "per_vu", "resume"),
    "full": ("h1", "per_request", "full"),
    "resumed": ("h1", "per_request", "resume"),
    "h2": ("h2", "shared", "resume"),
    # The default configuration: the server certificate verified against its CA.
    "full_verified": ("h1", "per_request", "full"),
    "resumed_verified": ("h1", "per_request", "resume"),
    # What each handshake mode costs (`http.tls.kx_groups`, `versions`): P-256 instead of
    # X25519, and TLS 1.2, whose resumption skips the key exchange (TLS 1.3's does not).
    "full_p256": ("h1", "per_request", "full"),
    "resumed_p256": ("h1", "per_request", "resume"),
    "full_12": ("h1", "per_request", "full"),
    "resumed_12": ("h1", "per_request", "resume"),
}
EXTRA = {
    "full_p256": ", kx_groups: [secp256r1]",
    "resumed_p256": ", kx_groups: [secp256r1]",
    "full_12": ', versions: "1.2"',
    "resumed_12": ', versions: "1.2"',
}
CA = "/tmp/onrush-tls-cost-ca.pem"
PIN = ["taskset", "-c", "0"]


def run_onrush(binary, tmp, case, seconds, r):
    version, scope, session = ONRUSH_CASES[case]
    plan = os.path.join(tmp, f"{case}.yaml")
    with open(plan, "w") as f:
        trust = f'ca_file: "{CA}"' if case.endswith("_verified") else "insecure: true"
        f.write(PLAN.format(addr=ADDR, version=version, scope=scope, session=session, seconds=seconds, trust=trust,
                             extra=EXTRA.get(case, "")))
    out = os.path.join(tmp, f"{case}-{r}")
    _, cpu = cpu_of([*PIN, binary, "run", plan, "-t", "1", "--quiet", "--out", out])
    s = json.load(open(os.path.join(out, "summary.json")))["totals"]
    hs = s.get("handshakes", {})
    note = f"handshakes full {hs.get('full')} resumed {hs.get('resumed')} failures {s['failures']}"
    return s["requests"], cpu, note


def run_h2load(case, seconds):
    args = {"keepalive": ["--h1", "-c50", "-m1"], "h2": ["-c5", "-m10"]}[case]
    out, cpu = cpu_of([*PIN, "h2load", "-t1", *args, "-D", str(seconds), URL])
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    proto = re.search(r"Application protocol: (\S+)", out)
    return done, cpu, f"protocol {proto.group(1) if proto else '?'}"


def run_wrk(case, seconds):
    extra = ["-H", "Connection: close"] if case == "full" else []
    out, cpu = cpu_of([*PIN, "wrk", "-t1", "-c50", f"-d{seconds}s", *extra, URL])
    return int(re.search(r"(\d+) requests in", out).group(1)), cpu, ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--cases", default="keepalive,full,resumed,h2,full_verified,resumed_verified")
    p.add_argument("--onrush", default=ONRUSH, help="the onrush binary to measure (and serve with)")
    a = p.parse_args()
    cases = a.cases.split(",")
    server = subprocess.Popen(["taskset", "-c", "1", a.onrush, "serve", "--tls", "--addr", ADDR, "--threads", "1",
                               "--ca-out", CA],
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    results = {}
    tools = {"keepalive": ["onrush", "h2load", "wrk"], "full": ["onrush", "wrk"], "resumed": ["onrush"],
             "h2": ["onrush", "h2load"], "full_verified": ["onrush"], "resumed_verified": ["onrush"],
             "full_p256": ["onrush"], "resumed_p256": ["onrush"], "full_12": ["onrush"], "resumed_12": ["onrush"]}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):
                for case in cases:
                    for tool in tools[case]:
                        if tool == "onrush":
                            n, cpu, note = run_onrush(a.onrush, tmp, case, a.seconds, r)
                        elif tool == "h2load":
                            n, cpu, note = run_h2load(case, a.seconds)
                        else:
                            n, cpu, note = run_wrk(case, a.seconds)
                        us = cpu * 1e6 / max(n, 1)
                        results.setdefault((tool, case), []).append(us)
                        print(f"round {r + 1} {tool:6} {case:9} {n / a.seconds:>9.0f} req/s {us:8.2f} µs/req {note}",
                              flush=True)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()
    med = {k: statistics.median(v) for k, v in results.items()}
    print()
    for case in cases:
        line = f"median {case:9}: " + ", ".join(f"{t} {med[(t, case)]:.2f} µs" for t in tools[case])
        ref = {"keepalive": "h2load", "full": "wrk", "h2": "h2load"}.get(case)
        if ref:
            line += f"; onrush/{ref} {med[('onrush', case)] / med[(ref, case)]:.3f}"
        if case == "keepalive":
            line += f"; onrush/wrk {med[('onrush', case)] / med[('wrk', case)]:.3f}"
        print(line)
    for suffix in ["", "_verified", "_p256", "_12"]:
        if f"full{suffix}" in cases and f"resumed{suffix}" in cases:
            print(f"resumed/full{suffix} (onrush): "
                  f"{med[('onrush', 'resumed' + suffix)] / med[('onrush', 'full' + suffix)]:.3f}")


if __name__ == "__main__":
    main()
