#!/usr/bin/env python3
"""A long run's memory: onrush's resident memory per second (its own generator.jsonl) over a run of
--minutes (default 60), and the slope after a warm-up. A run must not grow with its duration:
every second is written out as it closes and dropped (issue 15).

Target: `onrush serve --threads 1` pinned to CPU 1; the load pinned to CPU 0, one worker thread,
4 VUs cycling through 60 named steps with a 20 ms think time (each second holds a histogram per
step, so a run that kept its seconds would show it plainly). Only loopback is targeted; the run is
bounded by its duration. Exits 1 when the slope is over --ceiling MB per hour.

usage: bench/soak.py [--minutes 60] [--warmup 60] [--ceiling 5]
"""
import argparse, json, os, signal, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")
PORT = 18083


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
    p.add_argument("--warmup", type=int, default=60, help="seconds left out of the fit")
    p.add_argument("--ceiling", type=float, default=5.0, help="MB per hour")
    a = p.parse_args()
    seconds = int(a.minutes * 60)
    tmp = tempfile.mkdtemp(prefix="onrush-soak-")
    steps = "".join(f'      - {{ name: s{i:02}, get: "/?step={i}" }}\n' for i in range(60))
    plan = os.path.join(tmp, "soak.yaml")
    with open(plan, "w") as f:
        f.write(f"target: http://127.0.0.1:{PORT}\nscenarios:\n  - name: soak\n"
                f"    load: {{ vus: 4, duration: {seconds}s }}\n    steps:\n{steps}"
                "      - { think: 20ms }\n")
    out = os.path.join(tmp, "out")
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
        rss = [(line["t"], line["rss_mb"]) for line in map(json.loads, f)]
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    steady = [(t, m) for t, m in rss if a.warmup <= t < seconds]
    per_hour = slope(steady) * 3600
    print(f"{summary['totals']['requests']} requests in {seconds} s; RSS at {a.warmup} s "
          f"{steady[0][1]:.1f} MB, at the end {steady[-1][1]:.1f} MB, max {max(m for _, m in rss):.1f} MB; "
          f"slope after warm-up {per_hour:.2f} MB/hour (ceiling {a.ceiling})")
    if per_hour > a.ceiling:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
