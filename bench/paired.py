#!/usr/bin/env python3
"""onrush and wrk measured side by side *at the same time*: both on CPU 0, the built-in server
(`onrush serve --threads 1`) on CPU 1, for ROUNDS rounds of SECS seconds each. Each tool's CPU
per request is its own user + system time (wait4) over the requests it completed.

Why at the same time: this VM runs the same instructions 2-3.5x slower for tens of ms to
seconds at a time (bench/cpu_noise.c). Run one after the other, the two tools meet different
stretches, and the ratio of 4-second runs ranged 0.78-1.95 on the same binaries. Sharing CPU 0,
both meet the same stretches; the round's ratio is paired, and the median of the rounds is quoted.
Sharing costs each some cache and context switches, so the absolute figures are higher than
alone; the ratio is the result.

  bench/paired.py [--binary target/release/onrush] [--rounds 7] [--secs 3] [--http 'close: normal']
                  keepalive|new_connection

keepalive: 50 connections, GET / (onrush quick -c 50; wrk -c 50). new_connection: 50 VUs, a new
connection per request (onrush `connections: per_request`; wrk with `Connection: close`).
Loopback only; each round ends by itself.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def start_server(binary, work):
    out = open(os.path.join(work, "serve.out"), "w")
    server = subprocess.Popen(
        ["taskset", "-c", "1", binary, "serve", "--addr", "127.0.0.1:0", "--threads", "1"],
        stdout=out, stderr=subprocess.STDOUT)
    for _ in range(100):
        m = re.search(r"127\.0\.0\.1:\d+", open(os.path.join(work, "serve.out")).read())
        if m:
            return server, m.group(0)
        time.sleep(0.05)
    server.kill()
    sys.exit("onrush serve did not print its address")


def cpu_of(pid):
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"process {pid} exited with {status}")
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/onrush")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--http", default="", help="more of onrush's `http:` map, e.g. 'close: normal'")
    ap.add_argument("case", choices=["keepalive", "new_connection"])
    a = ap.parse_args()
    work = tempfile.mkdtemp()
    server, addr = start_server(a.binary, work)
    try:
        plan = os.path.join(work, "plan.yaml")
        with open(plan, "w") as f:
            f.write(f"target: http://{addr}\n")
            http = ["connections: per_request"] if a.case == "new_connection" else []
            http += [a.http] if a.http else []
            if http:
                f.write(f"http: {{ {', '.join(http)} }}\n")
            f.write("scenarios:\n  - name: s\n"
                    f"    load: {{ vus: 50, duration: {a.secs}s }}\n"
                    "    steps: [ { get: / } ]\n")
        wrk_args = ["wrk", "-t1", "-c50", f"-d{a.secs}s", f"http://{addr}/"]
        if a.case == "new_connection":
            wrk_args[1:1] = ["-H", "Connection: close"]
        ratios = []
        for r in range(a.rounds):
            out = os.path.join(work, f"out{r}")
            onrush = subprocess.Popen(
                ["taskset", "-c", "0", a.binary, "run", plan, "-t", "1", "--quiet", "--out", out],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wrk = subprocess.Popen(["taskset", "-c", "0"] + wrk_args,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            wrk_text = wrk.stdout.read()
            wrk_cpu, onrush_cpu = cpu_of(wrk.pid), cpu_of(onrush.pid)
            wrk.returncode = onrush.returncode = 0  # reaped by wait4
            n_onrush = json.load(open(os.path.join(out, "summary.json")))["totals"]["requests"]
            n_wrk = int(re.search(r"(\d+) requests in", wrk_text).group(1))
            o, w = onrush_cpu * 1e6 / n_onrush, wrk_cpu * 1e6 / n_wrk
            ratios.append(o / w)
            print(f"round {r + 1}: onrush {o:6.2f} us/req ({n_onrush} req)  "
                  f"wrk {w:6.2f} us/req ({n_wrk} req)  onrush/wrk {o / w:.2f}", flush=True)
        print(f"{a.case}: median onrush/wrk {statistics.median(ratios):.2f} over {a.rounds} rounds "
              f"(range {min(ratios):.2f}-{max(ratios):.2f})")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
