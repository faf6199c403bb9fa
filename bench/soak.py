#!/usr/bin/env python3
"""A long run's own cost over time: a realistic plan (five steps with a feeder, two extractors,
templates and a check, in the open model) for --minutes (default 60) against the built-in server,
and onrush's resident memory, CPU, schedule lag and open files from its own generator.jsonl, every
10 s and as least-squares slopes after a warm-up. A run must not grow with its duration: every
second is written out as it closes and dropped, the monitor keeps peaks, not a history.

Target: `onrush serve --threads 1` pinned to CPU 1; the load pinned to CPU 0, one worker thread,
--rate iterations/s (5 requests each). Only loopback is targeted; the run is bounded by its
duration. Exits 1 when the memory slope is over --ceiling MB per hour.

usage: bench/soak.py [--minutes 60] [--rate 200] [--warmup 60] [--ceiling 5] [--out DIR]
"""
import argparse, json, os, signal, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")
PORT = 18083

PLAN = """
target: http://127.0.0.1:{port}
scenarios:
  - name: shop
    load: {{ rate: {rate}, duration: {seconds}s, max_vus: 200 }}
    feeders: [{{ file: {users}, mode: circular }}]
    steps:
      - get: /html
        name: page
        extract: {{ csrf: {{ boundary: ['name="csrf_token" value="', '"'] }} }}
      - {{ post: /echo, name: post, form: {{ csrf_token: "${{csrf}}", username: "${{user}}" }} }}
      - get: /json
        name: json
        extract: {{ token: {{ jsonpath: "$.token" }} }}
      - {{ get: "/query?token=${{token}}&u=${{user}}", name: query, check: {{ status: 200 }} }}
      - {{ get: /headers, name: headers, headers: {{ X-User: "${{user}}", X-Request-Id: "${{uuid()}}" }} }}
"""


def slope(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    num = sum((x - mx) * (y - my) for x, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return num / den


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--rate", type=int, default=200, help="iterations per second (5 requests each)")
    p.add_argument("--warmup", type=int, default=60, help="seconds left out of the slopes")
    p.add_argument("--ceiling", type=float, default=5.0, help="MB per hour")
    p.add_argument("--out", help="results directory (default: a temporary one)")
    a = p.parse_args()
    seconds = int(a.minutes * 60)
    tmp = tempfile.mkdtemp(prefix="onrush-soak-")
    users = os.path.join(tmp, "users.csv")
    with open(users, "w") as f:
        f.write("user,password\n" + "".join(f"user{i},pw{i}\n" for i in range(1000)))
    plan = os.path.join(tmp, "soak.yaml")
    with open(plan, "w") as f:
        f.write(PLAN.format(port=PORT, rate=a.rate, seconds=seconds, users=users))
    out = a.out or os.path.join(tmp, "out")
    server = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--addr", f"127.0.0.1:{PORT}",
                               "--threads", "1"], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        subprocess.run(["taskset", "-c", "0", ONRUSH, "run", plan, "-t", "1", "--quiet", "--out", out],
                       check=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    with open(os.path.join(out, "generator.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    requests = summary["totals"]["requests"]
    per_s = requests / seconds
    print(f"{requests} requests in {seconds} s ({per_s:.0f}/s), {summary['totals']['failures']} failed")
    print("   t   rss_mb  cpu_%  µs/req  lag_p99_ms  open_fds")
    for line in lines:
        if line["t"] % 10 == 0 or line["t"] == lines[-1]["t"]:
            cpu = line["cpu_percent"]
            us = cpu * 1e4 / per_s if cpu is not None and per_s else float("nan")
            lag = line["schedule_lag_p99_ms"]
            print(f"{line['t']:>5} {line['rss_mb']:>8.1f} {cpu if cpu is not None else float('nan'):>6.1f} "
                  f"{us:>7.1f} {lag if lag is not None else float('nan'):>11.3f} {line['open_fds']:>9}")
    steady = [l for l in lines if a.warmup <= l["t"] < seconds and l["cpu_percent"] is not None]
    series = {
        "rss_mb": [(l["t"], l["rss_mb"]) for l in steady],
        "cpu_percent": [(l["t"], l["cpu_percent"]) for l in steady],
        "open_fds": [(l["t"], l["open_fds"]) for l in steady],
        "schedule_lag_p99_ms": [(l["t"], l["schedule_lag_p99_ms"]) for l in steady
                                if l["schedule_lag_p99_ms"] is not None],
    }
    for name, points in series.items():
        first = sum(v for _, v in points[:60]) / max(1, len(points[:60]))
        last = sum(v for _, v in points[-60:]) / max(1, len(points[-60:]))
        print(f"{name:>20}: first minute after warm-up {first:.3f}, last minute {last:.3f}, "
              f"slope {slope(points) * 3600:.3f} per hour")
    per_hour = slope(series["rss_mb"]) * 3600
    print(f"memory slope {per_hour:.2f} MB/hour (ceiling {a.ceiling})")
    if per_hour > a.ceiling:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
