#!/usr/bin/env python3
"""What the plan's JavaScript costs per request, in user-space instructions (cachegrind), the
way bench/instructions.py measures: a short and a long run of the same plan, the difference
divided by the difference in requests (start-up, the engine's creation and shutdown cancel out).

  bench/script_cost.py ONRUSH_BINARY [--rounds 3]

Plans (one VU, keep-alive, against `onrush serve --threads 1` on the last CPU, onrush on CPU 0):
  plain        POST /echo with a 1 KiB body                      (the reference)
  script_step  the same, and an empty `script:` step per request (the call itself)
  before_hmac  the same POST with `before: sign`, an HMAC-SHA256 of the body into a header

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

BODY = "x" * 1024
SIGN_JS = """import { hmac } from 'onrush/crypto';
export function sign(req, ctx) { req.headers['x-signature'] = hmac('sha256', 'k3y', req.body); }
"""

PLANS = {
    "plain": "      - post: /echo\n        body: '{body}'\n",
    "script_step": "      - post: /echo\n        body: '{body}'\n      - script: \"\"\n",
    "before_hmac": "      - post: /echo\n        body: '{body}'\n        before: sign\n",
}


def plan_text(addr, case, iterations):
    head = f"target: http://{addr}\n"
    if case == "before_hmac":
        head += "scripts: [sign.js]\n"
    return (head + "scenarios:\n  - name: s\n    load: { vus: 1, iterations: %d }\n    steps:\n" % iterations
            + PLANS[case].format(body=BODY))


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


def instructions(binary, addr, case, iterations):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "sign.js"), "w") as f:
            f.write(SIGN_JS)
        plan = os.path.join(d, "plan.yaml")
        with open(plan, "w") as f:
            f.write(plan_text(addr, case, iterations))
        out = os.path.join(d, "out")
        cmd = ["taskset", "-c", "0", "valgrind", "--tool=cachegrind", "--cache-sim=no",
               "--cachegrind-out-file=/dev/null", binary, "run", plan, "-t", "1", "--quiet",
               "--out", out]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        m = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
        if not m:
            sys.exit(f"no instruction count from {' '.join(cmd)}:\n{run.stderr[-2000:]}")
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        if s["totals"]["failures"]:
            sys.exit(f"{case}: {s['totals']['failures']} failures: {s['totals'].get('failures_by_class')}")
        return int(m.group(1).replace(",", "")), s["totals"]["requests"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    server, addr = serve(a.binary)
    results = {}
    try:
        for r in range(a.rounds):
            for case in PLANS:
                i1, n1 = instructions(a.binary, addr, case, 1000)
                i2, n2 = instructions(a.binary, addr, case, 6000)
                per = (i2 - i1) / (n2 - n1)
                results.setdefault(case, []).append(per)
                print(f"round {r + 1} {case}: {per:,.0f} instructions/request", flush=True)
    finally:
        server.kill()
        server.wait()
    base = statistics.median(results["plain"])
    for case, values in results.items():
        med = statistics.median(values)
        print(f"{case:12} median {med:,.0f} instructions/request ({med - base:+,.0f} vs plain)")


if __name__ == "__main__":
    main()
