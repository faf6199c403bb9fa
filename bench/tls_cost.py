#!/usr/bin/env python3
"""CPU microseconds per HTTPS request of onrush vs wrk on the built-in server over TLS, in one run.

`onrush serve --tls --threads 1` on CPU 1, the tools on CPU 0. Cases:
  keepalive   50 keep-alive connections                         (wrk: -c50)
  full        a new connection + full handshake per request     (wrk: -c50 -H 'Connection: close')
  resumed     a new connection + resumed handshake per request  (no wrk equivalent: wrk never resumes)
onrush closes first in `full`/`resumed` (as a browser or JMeter does); wrk's Connection: close has the
server close. Medians of --rounds rounds.

usage: bench/tls_cost.py [--rounds 3] [--seconds 5]
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_per_request import ONRUSH, cpu_of  # noqa: E402

ADDR = "127.0.0.1:18443"
PLAN = """target: https://{addr}
http: {{ connections: {scope}, tls: {{ session: {session}, insecure: true }} }}
scenarios:
  - name: tls
    load: {{ vus: 50, duration: {seconds}s }}
    steps: [ {{ get: / }} ]
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=5)
    a = p.parse_args()
    server = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--tls", "--addr", ADDR, "--threads", "1"],
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):
                for case in ["keepalive", "full", "resumed"]:
                    scope, session = {"keepalive": ("per_vu", "resume"), "full": ("per_request", "full"),
                                      "resumed": ("per_request", "resume")}[case]
                    plan = os.path.join(tmp, f"{case}.yaml")
                    with open(plan, "w") as f:
                        f.write(PLAN.format(addr=ADDR, scope=scope, session=session, seconds=a.seconds))
                    out = os.path.join(tmp, f"{case}-{r}")
                    _, cpu = cpu_of(["taskset", "-c", "0", ONRUSH, "run", plan, "-t", "1", "--quiet", "--out", out])
                    s = json.load(open(os.path.join(out, "summary.json")))["totals"]
                    us = cpu * 1e6 / s["requests"]
                    hs = s.get("handshakes", {})
                    results.setdefault(("onrush", case), []).append(us)
                    print(f"round {r + 1} onrush {case:9} {s['requests'] / a.seconds:>9.0f} req/s {us:8.2f} µs/req "
                          f"handshakes full {hs.get('full')} resumed {hs.get('resumed')} failures {s['failures']}", flush=True)
                    if case != "resumed":
                        extra = ["-H", "Connection: close"] if case == "full" else []
                        wout, wcpu = cpu_of(["taskset", "-c", "0", "wrk", "-t1", "-c50", f"-d{a.seconds}s", *extra,
                                             f"https://{ADDR}/"])
                        n = int(re.search(r"(\d+) requests in", wout).group(1))
                        results.setdefault(("wrk", case), []).append(wcpu * 1e6 / n)
                        print(f"round {r + 1} wrk    {case:9} {n / a.seconds:>9.0f} req/s {wcpu * 1e6 / n:8.2f} µs/req", flush=True)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()
    med = {k: statistics.median(v) for k, v in results.items()}
    for case in ["keepalive", "full"]:
        print(f"median {case}: onrush {med[('onrush', case)]:.2f} µs, wrk {med[('wrk', case)]:.2f} µs, "
              f"ratio {med[('onrush', case)] / med[('wrk', case)]:.3f}")
    print(f"median resumed: onrush {med[('onrush', 'resumed')]:.2f} µs; resumed/full "
          f"{med[('onrush', 'resumed')] / med[('onrush', 'full')]:.3f}")


if __name__ == "__main__":
    main()
