#!/usr/bin/env python3
"""Where an open model's schedule lag comes from, per 100 ms: runs `onrush run -t 1` of one
open-model scenario (GET /) on CPU 0 against `onrush serve --threads 1` on CPU 1, samples every
100 ms the worker thread's CPU and run-queue wait (/proc/PID/task/TID/schedstat), the main
thread's CPU, the server's CPU, ksoftirqd/0's and CPU 0's steal, nice and busy ticks; then prints each second's
lag (generator.jsonl) and latency (intervals). Run it pinned to CPU 1 (`taskset -c 1`) so the
sampling does not take the worker's CPU. Loopback only, bounded by the duration.

  taskset -c 1 bench/lag_probe.py BINARY RATE [SECONDS=6] [MAX_VUS=3000] [--no-sample] [--nginx]

--no-sample: only the per-second figures and the totals (no sampling during the run).
--nginx: the target is nginx (bench/nginx.conf: one worker, on 127.0.0.1:18080) instead of
`onrush serve`; its worker process is the server sampled.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
sample = "--no-sample" not in sys.argv
binary, rate = args[0], int(args[1])
secs = int(args[2]) if len(args) > 2 else 6
max_vus = args[3] if len(args) > 3 else "3000"
work = tempfile.mkdtemp()
nginx = "--nginx" in sys.argv
if nginx:
    # nginx.conf says `daemon off`: this process is the master, its one child the worker.
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nginx.conf")
    master = subprocess.Popen(["taskset", "-c", "1", "nginx", "-c", conf])
    addr, nginx_worker = "127.0.0.1:18080", None
    for _ in range(50):
        time.sleep(0.1)
        kids = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True, text=True).stdout.split()
        if kids:
            nginx_worker = int(kids[0])
            break
    if nginx_worker is None:
        master.kill()
        sys.exit("nginx started no worker (is port 18080 free?)")
    server_pid = nginx_worker
else:
    master = subprocess.Popen(["taskset", "-c", "1", binary, "serve", "--addr", "127.0.0.1:0", "--threads", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    addr = None
    for _ in range(50):
        m = re.search(r"127\.0\.0\.1:\d+", master.stdout.readline())
        if m:
            addr = m.group(0)
            break
    server_pid = master.pid
with open(f"{work}/plan.yaml", "w") as f:
    f.write(f"target: http://{addr}\nscenarios:\n  - name: s\n    load: {{ rate: {rate}/s, duration: {secs}s, "
            f"max_vus: {max_vus} }}\n    steps: [ {{ get: / }} ]\n")
started = time.time()
run = subprocess.Popen(["taskset", "-c", "0", binary, "run", f"{work}/plan.yaml", "-t", "1", "--quiet", "--out",
                        f"{work}/out"], stdout=subprocess.DEVNULL)
ksoftirqd = next((p for p in glob.glob("/proc/[0-9]*/stat") if "(ksoftirqd/0)" in open(p).read()), None)


def ticks_of(stat):
    s = open(stat).read()
    f = s[s.rfind(")") + 2:].split()
    return int(f[11]) + int(f[12])


def cpu0():
    for line in open("/proc/stat"):
        if line.startswith("cpu0 "):
            f = list(map(int, line.split()[1:]))
            return f[7], f[1], f[0] + f[2] + f[5] + f[6]  # steal, nice, user+system+irq+softirq


samples = []
while sample and run.poll() is None:
    row = {"t": time.time() - started, "ksoftirqd": ticks_of(ksoftirqd) if ksoftirqd else 0, "cpu0": cpu0()}
    try:
        for tid in os.listdir(f"/proc/{run.pid}/task"):
            name = "main" if int(tid) == run.pid else open(f"/proc/{run.pid}/task/{tid}/comm").read().strip()
            run_ns, wait_ns, _ = map(int, open(f"/proc/{run.pid}/task/{tid}/schedstat").read().split())
            row[name] = (run_ns, wait_ns)
    except OSError:
        pass
    try:
        row["server"] = sum(int(open(f"/proc/{server_pid}/task/{tid}/schedstat").read().split()[0])
                            for tid in os.listdir(f"/proc/{server_pid}/task"))
    except OSError:
        row["server"] = 0
    samples.append(row)
    time.sleep(0.1)
run.wait()
if nginx:
    # SIGQUIT: nginx's graceful stop, which ends its worker too (a killed master leaves it).
    master.send_signal(3)
    try:
        master.wait(timeout=5)
    except subprocess.TimeoutExpired:
        master.kill()
        os.kill(nginx_worker, 9)
else:
    master.kill()
if sample:
    print("t(s)  worker_run_ms worker_wait_ms main_run_ms ksoftirqd0_ms server_run_ms | cpu0 ticks: steal nice busy")
    for prev, row in zip(samples, samples[1:]):
        if "onrush-worker-0" in row and "onrush-worker-0" in prev:
            w, pw = row["onrush-worker-0"], prev["onrush-worker-0"]
            m, pm = row.get("main", (0, 0)), prev.get("main", (0, 0))
            c, pc = row["cpu0"], prev["cpu0"]
            print(f"{row['t']:5.1f} {(w[0] - pw[0]) / 1e6:8.1f} {(w[1] - pw[1]) / 1e6:8.2f} {(m[0] - pm[0]) / 1e6:8.1f}"
                  f" {(row['ksoftirqd'] - prev['ksoftirqd']) * 10:6d} {(row['server'] - prev['server']) / 1e6:8.1f}"
                  f" | {c[0] - pc[0]:4d} {c[1] - pc[1]:4d} {c[2] - pc[2]:4d}")
print("second  lag_p50 lag_p99 lag_max (ms)  dropped  worker_cpu%")
for line in open(f"{work}/out/generator.jsonl"):
    j = json.loads(line)
    if "t" in j and j.get("schedule_lag_p99_ms") is not None:
        print(j["t"], j["schedule_lag_p50_ms"], j["schedule_lag_p99_ms"], j["schedule_lag_max_ms"],
              j["dropped_iterations"], j["worker_cpu_percent"])
t = json.load(open(f"{work}/out/summary.json"))["totals"]
print(f"totals: lag p50 {t['schedule_lag_ms']['p50']} p99 {t['schedule_lag_ms']['p99']} ms, "
      f"dropped {t['dropped_iterations']}, iterations {t['iterations']}; results in {work}/out")
