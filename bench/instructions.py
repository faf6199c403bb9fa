#!/usr/bin/env python3
"""User-space instructions per request of one or more onrush binaries, measured the same way in
one run: valgrind (cachegrind, no cache simulation) counts the whole process's instructions for a
short and a long run, and the difference divided by the difference in requests is the marginal
cost of one request (start-up and shutdown cancel out). Instruction counts do not drift with the
machine's load, so two builds can be compared to a fraction of a percent.

  bench/instructions.py OLD_BINARY NEW_BINARY [--rounds 3] [--cases keepalive] [--wrk]

--samples adds each binary again with `--samples FILE` (a file in a temporary directory): what
writing a line per request costs (docs/benchmarks.md, "Samples").

--wrk adds wrk's count measured the same way against the same server in the same round
(`wrk -t1 -c50`, duration-based: 2 s vs 10 s, the requests read from its "N requests in" line).

Cases (against `onrush serve --threads 1` on the last CPU; onrush on CPU 0, one worker):
  keepalive  closed loop, 50 keep-alive connections: 2,000 vs 20,000 requests
  open       open model at 200 arrivals/s (what valgrind keeps up with): 2 s vs 12 s

Loopback only; every process is bounded in time and stopped by this script.
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


def serve(binary):
    cpus = os.cpu_count() or 1
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpus - 1), binary, "serve", "--addr", "127.0.0.1:0", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(50):
        line = proc.stdout.readline()
        m = re.search(r"(127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    sys.exit("the built-in server did not say where it listens")


def instructions(binary, addr, args, samples=False):
    """Instructions of one `onrush quick` run and the requests it made."""
    with tempfile.TemporaryDirectory() as out:
        extra = ["--samples", os.path.join(out, "samples.csv")] if samples else []
        cmd = ["taskset", "-c", "0", "valgrind", "--tool=cachegrind", "--cache-sim=no",
               "--cachegrind-out-file=/dev/null", binary, "quick", f"http://{addr}/",
               "-t", "1", "--out", out, "--json"] + args + extra
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        m = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
        if not m:
            sys.exit(f"no instruction count from {' '.join(cmd)}:\n{run.stderr[-2000:]}")
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        return int(m.group(1).replace(",", "")), summary["totals"]["requests"]


def wrk_instructions(addr, seconds):
    """Instructions of one `wrk -t1 -c50 -dNs` run and the requests it made."""
    cmd = ["taskset", "-c", "0", "valgrind", "--tool=cachegrind", "--cache-sim=no",
           "--cachegrind-out-file=/dev/null", "wrk", "-t1", "-c50", f"-d{seconds}s",
           f"http://{addr}/"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    m = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    n = re.search(r"(\d+) requests in", run.stdout)
    if not m or not n:
        sys.exit(f"no instruction or request count from {' '.join(cmd)}:\n{run.stdout}\n{run.stderr[-2000:]}")
    return int(m.group(1).replace(",", "")), int(n.group(1))


CASES = {
    "keepalive": (["-c", "50", "-n", "2000"], ["-c", "50", "-n", "20000"]),
    "open": (["-c", "20", "-r", "200", "-d", "2s"], ["-c", "20", "-r", "200", "-d", "12s"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="keepalive,open")
    ap.add_argument("--samples", action="store_true",
                    help="also each binary with --samples (a CSV line per request)")
    ap.add_argument("--wrk", action="store_true",
                    help="also wrk's keep-alive count, against the first binary's server")
    a = ap.parse_args()
    # (label, binary, with --samples): the labels are what the results are keyed and printed by.
    variants = [(b, b, False) for b in a.binaries]
    if a.samples:
        variants += [(f"{b} --samples", b, True) for b in a.binaries]
    results = {}
    for r in range(a.rounds):
        for case in a.cases.split(","):
            short, long_ = CASES[case]
            for label, binary, samples in variants:  # interleaved: the same conditions for each
                server, addr = serve(binary)
                try:
                    i1, n1 = instructions(binary, addr, short, samples)
                    i2, n2 = instructions(binary, addr, long_, samples)
                finally:
                    server.kill()
                    server.wait()
                per = (i2 - i1) / max(1, n2 - n1)
                results.setdefault((case, label), []).append(per)
                print(f"round {r + 1} {case:9} {label}: {per:,.0f} instructions/request "
                      f"({n1} and {n2} requests)", flush=True)
        if a.wrk:
            server, addr = serve(a.binaries[0])
            try:
                i1, n1 = wrk_instructions(addr, 2)
                i2, n2 = wrk_instructions(addr, 10)
            finally:
                server.kill()
                server.wait()
            per = (i2 - i1) / max(1, n2 - n1)
            results.setdefault(("keepalive", "wrk"), []).append(per)
            print(f"round {r + 1} keepalive wrk: {per:,.0f} instructions/request "
                  f"({n1} and {n2} requests)", flush=True)
    print()
    base = a.binaries[0]
    for case in a.cases.split(","):
        ref = statistics.median(results[(case, base)])
        for binary, _, _ in variants:
            med = statistics.median(results[(case, binary)])
            print(f"{case:9} {binary}: median {med:,.0f} instructions/request ({med / ref:.3f}x {base})")
        if case == "keepalive" and a.wrk:
            med = statistics.median(results[("keepalive", "wrk")])
            print(f"{case:9} wrk: median {med:,.0f} instructions/request ({med / ref:.3f}x {base})")


if __name__ == "__main__":
    main()
