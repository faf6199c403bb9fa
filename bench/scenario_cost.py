#!/usr/bin/env python3
"""What realism costs: CPU microseconds per request of a 5-step scenario with a feeder, two
extractors and templates, against the same 5 requests with constant values, in one run.

Target: `onrush serve --threads 1` pinned to CPU 1; the load tool pinned to CPU 0, one worker
thread, 50 VUs, closed model. Each round runs both plans (alternating order) and measures onrush's
user+system CPU time with getrusage; medians of the rounds and the ratio are printed. Only
loopback is targeted; every run is bounded by its duration.

usage: bench/scenario_cost.py [--rounds 5] [--seconds 10] [--vus 50]
"""
import argparse, json, os, resource, signal, statistics, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")
PORT = 18082

PLAIN = """
target: http://127.0.0.1:{port}
scenarios:
  - name: s
    load: {{ vus: {vus}, duration: {seconds}s }}
    steps:
      - {{ get: /html, name: page }}
      - {{ post: /echo, name: post, headers: {{ Content-Type: application/x-www-form-urlencoded }}, body: "csrf_token=csrf-5b8e1d4a9c07&username=user17" }}
      - {{ get: /json, name: json }}
      - {{ get: "/query?token=onrush-session-7f3c9a2e41d8&u=user17", name: query }}
      - {{ get: /headers, name: headers, headers: {{ X-User: user17, X-Request-Id: 8d7c3d2e-3f0a-4b8e-9a51-0c6b1f2d9e47 }} }}
"""

REALISTIC = """
target: http://127.0.0.1:{port}
scenarios:
  - name: s
    load: {{ vus: {vus}, duration: {seconds}s }}
    feeders: [{{ file: {users}, mode: circular }}]
    steps:
      - get: /html
        name: page
        extract: {{ csrf: {{ boundary: ['name="csrf_token" value="', '"'] }} }}
      - {{ post: /echo, name: post, form: {{ csrf_token: "${{csrf}}", username: "${{user}}" }} }}
      - get: /json
        name: json
        extract: {{ token: {{ jsonpath: "$.token" }} }}
      - {{ get: "/query?token=${{token}}&u=${{user}}", name: query }}
      - {{ get: /headers, name: headers, headers: {{ X-User: "${{user}}", X-Request-Id: "${{uuid()}}" }} }}
"""


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(plan_path, out):
    cpu = cpu_of(["taskset", "-c", "0", ONRUSH, "run", plan_path, "-t", "1", "--quiet", "--out", out])
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return summary["totals"]["requests"], summary["totals"]["failures"], cpu


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--vus", type=int, default=50)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="onrush-scenario-cost-")
    users = os.path.join(tmp, "users.csv")
    with open(users, "w") as f:
        f.write("user,password\n" + "".join(f"user{i},pw{i}\n" for i in range(1000)))
    plans = {}
    for name, text in (("plain", PLAIN), ("realistic", REALISTIC)):
        path = os.path.join(tmp, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(text.format(port=PORT, vus=a.vus, seconds=a.seconds, users=users))
        plans[name] = path
    server = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--addr", f"127.0.0.1:{PORT}",
                               "--threads", "1"], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    results = {"plain": [], "realistic": []}
    try:
        for r in range(a.rounds):
            order = ["plain", "realistic"] if r % 2 == 0 else ["realistic", "plain"]
            for name in order:
                n, failed, cpu = run(plans[name], os.path.join(tmp, f"out-{name}"))
                us = cpu * 1e6 / n
                results[name].append((us, n / a.seconds))
                print(f"round {r + 1} {name:9} {n / a.seconds:>9.0f} req/s  {us:6.2f} CPU µs/req"
                      f"  ({failed} failed)", flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    med = {k: statistics.median(u for u, _ in v) for k, v in results.items()}
    print(f"median  plain {med['plain']:.2f} µs/req, realistic {med['realistic']:.2f} µs/req, "
          f"ratio realistic/plain {med['realistic'] / med['plain']:.3f}")


if __name__ == "__main__":
    main()
