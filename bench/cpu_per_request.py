#!/usr/bin/env python3
"""CPU microseconds per request of onrush vs wrk on the same target, in one run.

The target (nginx with 1 worker, or `onrush serve --threads 1`) is pinned to CPU 1 and the load
tool to CPU 0. Each round runs wrk then onrush (alternating order), measures the tool's user+system
CPU time with getrusage and its request count, and the medians of the rounds are reported with the
ratio onrush/wrk. Only loopback is targeted; every run is bounded by -d.

usage: bench/cpu_per_request.py [--target nginx|builtin] [--rounds 5] [--seconds 10] [--connections 50]
"""
import argparse, json, os, re, resource, shutil, signal, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")


def cpu_of(cmd):
    """Runs cmd to completion; returns (stdout, user+sys CPU seconds of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu


def wrk(url, seconds, connections):
    out, cpu = cpu_of(["taskset", "-c", "0", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url])
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return requests, cpu


def onrush(url, seconds, connections):
    out, cpu = cpu_of(["taskset", "-c", "0", ONRUSH, "quick", url, "-t", "1", "-c", str(connections),
                       "-d", f"{seconds}s", "--quiet", "--json", "--out", "/tmp/onrush-bench-results"])
    summary = json.loads(out)
    return summary["totals"]["requests"], cpu


def start_target(kind):
    if kind == "nginx":
        os.makedirs("/tmp/onrush-bench-files", exist_ok=True)
        proc = subprocess.Popen(["taskset", "-c", "1", "nginx", "-c", os.path.join(ROOT, "bench", "nginx.conf")])
        url = "http://127.0.0.1:18080/"
    else:
        proc = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--addr", "127.0.0.1:18081", "--threads", "1"],
                                stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:18081/"
    time.sleep(0.5)
    return proc, url


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", default="nginx", choices=["nginx", "builtin"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=50)
    a = p.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install -y wrk")
    proc, url = start_target(a.target)
    results = {"wrk": [], "onrush": []}
    try:
        for r in range(a.rounds):
            order = ["wrk", "onrush"] if r % 2 == 0 else ["onrush", "wrk"]
            for tool in order:
                n, cpu = (wrk if tool == "wrk" else onrush)(url, a.seconds, a.connections)
                us = cpu * 1e6 / n
                results[tool].append((us, n / a.seconds))
                print(f"round {r + 1} {tool:7} {n / a.seconds:>10.0f} req/s  {us:6.2f} CPU µs/req", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM if a.target == "builtin" else signal.SIGQUIT)
        proc.wait()
    med = {t: statistics.median(u for u, _ in v) for t, v in results.items()}
    rate = {t: statistics.median(r for _, r in v) for t, v in results.items()}
    print(f"median  wrk {med['wrk']:.2f} µs/req ({rate['wrk']:.0f} req/s), "
          f"onrush {med['onrush']:.2f} µs/req ({rate['onrush']:.0f} req/s), "
          f"ratio onrush/wrk {med['onrush'] / med['wrk']:.3f}")


if __name__ == "__main__":
    main()
