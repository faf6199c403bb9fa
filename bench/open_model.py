#!/usr/bin/env python3
"""The open model's cost on one worker, for one or more onrush builds, in one run: for each rate,
CPU microseconds per request (user + system time of the onrush process from getrusage, over its
whole life, divided by the requests it completed) and the schedule lag p50/p99 from its
summary.json. The builds run interleaved, round after round, so that each sees the same machine;
the medians of the rounds are printed with the ratio to the first build.

  bench/open_model.py OLD_BINARY NEW_BINARY [--rates 1000,5000,20000,60000] [--seconds 5]
                      [--rounds 3] [--target builtin|nginx]

The target (`onrush serve --threads 1` of the first binary, or nginx with bench/nginx.conf) runs
on the last CPU and onrush on CPU 0 with `-t 1`. Loopback only; every run is bounded by -d.
"""
import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_target(kind, binary):
    cpu = str((os.cpu_count() or 1) - 1)
    if kind == "nginx":
        os.makedirs("/tmp/onrush-bench-files", exist_ok=True)
        proc = subprocess.Popen(["taskset", "-c", cpu, "nginx", "-c",
                                 os.path.join(ROOT, "bench", "nginx.conf")])
        time.sleep(0.5)
        return proc, "127.0.0.1:18080"
    proc = subprocess.Popen(
        ["taskset", "-c", cpu, binary, "serve", "--addr", "127.0.0.1:0", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(50):
        m = re.search(r"(127\.0\.0\.1:\d+)", proc.stdout.readline())
        if m:
            return proc, m.group(1)
    proc.kill()
    sys.exit("the built-in server did not say where it listens")


def one(binary, addr, rate, seconds, max_vus):
    with tempfile.TemporaryDirectory() as out:
        cmd = ["taskset", "-c", "0", binary, "quick", f"http://{addr}/", "-t", "1",
               "-r", str(rate), "-d", f"{seconds}s", "-c", str(max_vus),
               "--quiet", "--out", out]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=seconds + 60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(os.path.join(out, "summary.json")) as f:
            t = json.load(f)["totals"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sys_cpu = after.ru_stime - before.ru_stime
    n = max(1, t["requests"])
    return {
        "us": cpu * 1e6 / n,
        "sys_us": sys_cpu * 1e6 / n,
        "achieved": t["iterations"] / seconds,
        "dropped": t["dropped_iterations"],
        "p50": t["schedule_lag_ms"]["p50"],
        "p99": t["schedule_lag_ms"]["p99"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rates", default="1000,5000,20000,60000")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target", default="builtin", choices=["builtin", "nginx"])
    a = ap.parse_args()
    rates = [int(r) for r in a.rates.split(",")]
    proc, addr = start_target(a.target, a.binaries[0])
    results = {}
    try:
        for r in range(a.rounds):
            for rate in rates:
                max_vus = 200 if rate <= 5000 else 1000
                order = a.binaries if r % 2 == 0 else list(reversed(a.binaries))
                for binary in order:
                    m = one(binary, addr, rate, a.seconds, max_vus)
                    results.setdefault((rate, binary), []).append(m)
                    print(f"round {r + 1} {rate:>6}/s {binary}: {m['us']:6.2f} CPU µs/req "
                          f"(sys {m['sys_us']:.2f}), achieved {m['achieved']:.0f}/s, dropped "
                          f"{m['dropped']}, lag p50 {m['p50']:.3f} ms p99 {m['p99']:.3f} ms",
                          flush=True)
    finally:
        proc.send_signal(signal.SIGQUIT if a.target == "nginx" else signal.SIGTERM)
        proc.wait()
    print("\nmedians of the rounds:")
    print("| rate/s | build | CPU µs/req | (system) | vs first | achieved/s | dropped | lag p50 ms | lag p99 ms |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for rate in rates:
        ref = statistics.median(m["us"] for m in results[(rate, a.binaries[0])])
        for binary in a.binaries:
            ms = results[(rate, binary)]
            med = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
            print(f"| {rate:,} | {os.path.basename(binary)} | {med['us']:.1f} | {med['sys_us']:.1f} "
                  f"| {med['us'] / ref:.2f}x | {med['achieved']:,.0f} | {med['dropped']:.0f} "
                  f"| {med['p50']:.3f} | {med['p99']:.3f} |")


if __name__ == "__main__":
    main()
