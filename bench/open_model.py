#!/usr/bin/env python3
"""The open model's cost: CPU µs per request and schedule lag of onrush builds (and of vegeta,
a reference that also fires at a fixed rate), at several rates on one worker, in one run.

Each round runs every (tool, rate) pair once, the order of the tools alternating between rounds;
the medians of the rounds are printed with each build's ratio to the first. The target is the
built-in server of the first binary (`onrush serve --threads 1`) on the last CPU; the measured
tool runs on CPU 0 with one worker. CPU is user + system time of the tool (getrusage of the
child). Loopback only; every run is bounded by its duration.

  bench/open_model.py NAME=BINARY [NAME=BINARY ...] [--rates 1000,5000,20000,60000]
                      [--seconds 5] [--rounds 3] [--slack 1ms] [--vegeta]

A NAME may carry a slack, `new@0ms=target/release/onrush`, to run that build with
`arrival_slack: 0ms` (builds before the option existed are run without it).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

# The same pinned built-in server as the instructions benchmark.
from instructions import serve


def cpu_of(cmd, text=True, **kw):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=text, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_onrush(binary, slack, addr, rate, seconds, work):
    load = {"rate": f"{rate}/s", "duration": f"{seconds}s", "max_vus": max(200, rate // 20)}
    if slack is not None:
        load["arrival_slack"] = slack
    plan = {"target": f"http://{addr}", "scenarios": [{"name": "open", "load": load, "steps": [{"get": "/"}]}]}
    path = os.path.join(work, "plan.yaml")  # JSON is YAML
    with open(path, "w") as f:
        json.dump(plan, f)
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    _, cpu = cpu_of(["taskset", "-c", "0", binary, "run", path, "-t", "1", "--quiet", "--out", out_dir])
    with open(os.path.join(out_dir, "summary.json")) as f:
        t = json.load(f)["totals"]
    return {
        "cpu_us": cpu * 1e6 / max(1, t["requests"]),
        "achieved": t["iterations"] / seconds,
        "dropped": t["dropped_iterations"],
        "lag_p50": t["schedule_lag_ms"]["p50"],
        "lag_p99": t["schedule_lag_ms"]["p99"],
    }


def run_vegeta(addr, rate, seconds, work):
    out, cpu = cpu_of(["taskset", "-c", "0", "vegeta", "attack", "-rate", f"{rate}/s", "-duration", f"{seconds}s",
                       "-max-workers", str(max(200, rate // 20)), "-keepalive", "-http2=false"],
                      text=False, input=f"GET http://{addr}/\n".encode())
    rep = subprocess.run(["vegeta", "report", "-type", "json"], input=out.stdout, capture_output=True,
                         check=True)
    r = json.loads(rep.stdout)
    return {"cpu_us": cpu * 1e6 / max(1, r["requests"]), "achieved": r["requests"] / seconds,
            "dropped": None, "lag_p50": None, "lag_p99": None}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("builds", nargs="+")
    p.add_argument("--rates", default="1000,5000,20000,60000")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--vegeta", action="store_true")
    a = p.parse_args()
    tools = []
    for b in a.builds:
        name, binary = b.split("=", 1)
        slack = None
        if "@" in name:
            name, slack = name.split("@", 1)
            name = f"{name}@{slack}"
        tools.append((name, binary, slack))
    if a.vegeta:
        if not shutil.which("vegeta"):
            sys.exit("vegeta is not installed: go install github.com/tsenart/vegeta/v12@v12.13.0")
        tools.append(("vegeta", None, None))
    rates = [int(r) for r in a.rates.split(",")]
    server, addr = serve(tools[0][1])
    results = {}
    try:
        with tempfile.TemporaryDirectory() as work:
            for rnd in range(a.rounds):
                order = tools if rnd % 2 == 0 else list(reversed(tools))
                for rate in rates:
                    for name, binary, slack in order:
                        if binary is None:
                            r = run_vegeta(addr, rate, a.seconds, work)
                        else:
                            r = run_onrush(binary, slack, addr, rate, a.seconds, work)
                        results.setdefault((name, rate), []).append(r)
                        print(f"round {rnd + 1} {name} {rate}/s: {r}", file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
    print(f"{'tool':<14}{'rate/s':>8}{'CPU µs/req':>12}{'ratio':>7}{'achieved':>10}{'dropped':>9}{'lag p50':>9}{'lag p99':>9}")
    for rate in rates:
        first = statistics.median(r["cpu_us"] for r in results[(tools[0][0], rate)])
        for name, _, _ in tools:
            rs = results[(name, rate)]
            med = lambda k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else float("nan")
            cpu = med("cpu_us")
            print(f"{name:<14}{rate:>8}{cpu:>12.1f}{cpu / first:>7.2f}{med('achieved'):>10.0f}"
                  f"{med('dropped'):>9.0f}{med('lag_p50'):>9.3f}{med('lag_p99'):>9.3f}")


if __name__ == "__main__":
    main()
