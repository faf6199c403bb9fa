#!/usr/bin/env python3
"""What the live page costs the load: onrush's CPU per request without `--web`, with `--web`
and one browser attached, and with ten browsers attached, in the same run, rounds alternated.

  bench/live_overhead.py ONRUSH_BINARY [--rounds 5] [--seconds 10] [--vus 50]

A "browser" here makes the requests the live page's script makes (live.js): the page once,
then every second GET /api/status and GET /api/seconds?from=T for the seconds it lacks. The
pollers run in this script's process, pinned to the target's CPU, so that their own CPU is not
onrush's; onrush's CPU is its process's user + system time (rusage), divided by the requests
summary.json counts. The target is `onrush serve --threads 1` on the last CPU, onrush on CPU 0,
keep-alive GETs of a closed model. Loopback only; every process is bounded in time and stopped
by this script.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def serve(binary):
    cpus = os.cpu_count() or 1
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpus - 1), binary, "serve", "--addr", "127.0.0.1:0", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(50):
        m = re.search(r"(127\.0\.0\.1:\d+)", proc.stdout.readline())
        if m:
            return proc, m.group(1)
    proc.kill()
    sys.exit("the built-in server did not say where it listens")


def browser(url, stop, counts):
    """The live page's requests, once a second, until `stop`."""
    have = 0
    try:
        urllib.request.urlopen(url, timeout=10).read()
        counts["pages"] += 1
    except OSError:
        pass
    while not stop.is_set():
        try:
            s = json.load(urllib.request.urlopen(url + "api/status", timeout=5))
            counts["polls"] += 1
            if s.get("second") is not None and s["second"] >= have:
                chunk = json.load(urllib.request.urlopen(f"{url}api/seconds?from={have}", timeout=5))
                have = chunk["from"] + chunk["seconds"]
        except OSError:
            pass
        stop.wait(1.0)


def one_run(binary, addr, seconds, vus, browsers):
    with tempfile.TemporaryDirectory() as d:
        plan = os.path.join(d, "plan.yaml")
        with open(plan, "w") as f:
            f.write(f"target: http://{addr}\nscenarios:\n  - name: s\n"
                    f"    load: {{ vus: {vus}, duration: {seconds}s }}\n    steps:\n      - get: /\n")
        out = os.path.join(d, "out")
        cmd = ["taskset", "-c", "0", binary, "run", plan, "--quiet", "--threads", "1", "--out", out]
        if browsers is not None:
            cmd += ["--web", "127.0.0.1:0", "--web-linger", "0s"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stop, threads, counts = threading.Event(), [], {"pages": 0, "polls": 0}
        if browsers:
            url = None
            for _ in range(100):
                line = proc.stderr.readline()
                if line.startswith("live page: "):
                    url = line.split()[2]
                    break
            threads = [threading.Thread(target=browser, args=(url, stop, counts)) for _ in range(browsers)]
            for t in threads:
                t.start()
        _, status, usage = os.wait4(proc.pid, 0)
        stop.set()
        for t in threads:
            t.join()
        with open(os.path.join(out, "summary.json")) as f:
            requests = json.load(f)["totals"]["requests"]
        cpu_us = (usage.ru_utime + usage.ru_stime) * 1e6
        return cpu_us / requests, requests / seconds, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--vus", type=int, default=50)
    args = ap.parse_args()
    cpus = os.cpu_count() or 1
    os.sched_setaffinity(0, {cpus - 1})
    server, addr = serve(args.binary)
    cases = {"no --web": None, "--web, 1 browser": 1, "--web, 10 browsers": 10}
    results = {k: [] for k in cases}
    try:
        for r in range(args.rounds):
            for name, browsers in cases.items():
                cpu, rate, counts = one_run(args.binary, addr, args.seconds, args.vus, browsers)
                results[name].append((cpu, rate))
                print(f"round {r + 1} {name:20} {cpu:6.3f} µs CPU/request  {rate:9.0f} req/s  {counts}",
                      flush=True)
    finally:
        server.kill()
        server.wait()
    base_cpu = statistics.median(c for c, _ in results["no --web"])
    base_rate = statistics.median(r for _, r in results["no --web"])
    print(f"\nmedians of {args.rounds} rounds ({args.seconds} s each, {args.vus} VUs, one worker):")
    for name in cases:
        cpu = statistics.median(c for c, _ in results[name])
        rate = statistics.median(r for _, r in results[name])
        print(f"  {name:20} {cpu:6.3f} µs CPU/request ({cpu / base_cpu:5.3f}x)  "
              f"{rate:9.0f} req/s ({rate / base_rate:5.3f}x)")


if __name__ == "__main__":
    main()
