#!/usr/bin/env python3
"""The engine issue's performance checks, each against loopback only and bounded in time.

  open-rate   open model at 5,000/s for 10 s: achieved rate and schedule lag p99
  many-vus    10,000 keep-alive VUs on /delay/1000 for 15 s: peak RSS of onrush
  download    1 GiB downloaded 5 times by one VU: peak RSS, and throughput vs curl -o /dev/null

The target is `onrush serve` pinned to CPU 1; the tools run on CPU 0. Each check runs --rounds
times and prints the median.

usage: bench/scenarios.py open-rate|many-vus|download [--rounds 3]
"""
import argparse, json, os, resource, signal, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")
ADDR = "127.0.0.1:18082"
URL = f"http://{ADDR}"


def run_child(cmd):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds, peak RSS in MiB).

    Peak RSS is read from /proc/PID/status VmHWM while the process runs (ru_maxrss would count
    the Python image the child had between fork and exec). `taskset` execs the tool, so the PID
    is the tool's own; for a shell loop the largest descendant is sampled."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak_kib = 0
    out_parts = []
    import threading
    reader = threading.Thread(target=lambda: out_parts.append(proc.stdout.read()))
    reader.start()
    while True:
        for pid in [proc.pid] + descendants(proc.pid):
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak_kib = max(peak_kib, int(line.split()[1]))
            except OSError:
                pass
        _, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if _ != 0:
            break
        time.sleep(0.02)
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{cmd} exited {proc.returncode}")
    return "".join(out_parts), time.monotonic() - start, usage.ru_utime + usage.ru_stime, peak_kib / 1024


def descendants(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return []
    return kids + [d for k in kids for d in descendants(k)]


def onrush(*args):
    return ["taskset", "-c", "0", ONRUSH, "quick", *args, "-t", "1", "--quiet", "--json",
            "--out", "/tmp/onrush-bench-results"]


def open_rate(_):
    out, _, cpu, _ = run_child(onrush(f"{URL}/", "-r", "5000", "-d", "10s", "-c", "200"))
    s = json.loads(out)["totals"]
    achieved = s["iterations"] / 10.0
    print(f"  achieved {achieved:.0f}/s ({achieved / 5000 - 1:+.2%}), dropped {s['dropped_iterations']}, "
          f"schedule lag p99 {s['schedule_lag_ms']['p99']:.3f} ms max {s['schedule_lag_ms']['max']:.3f} ms, "
          f"CPU {cpu * 1e6 / max(s['requests'], 1):.1f} µs/req")
    return {"achieved_per_s": achieved, "lag_p99_ms": s["schedule_lag_ms"]["p99"]}


def many_vus(_):
    out, _, _, rss = run_child(onrush(f"{URL}/delay/1000", "-c", "10000", "-d", "15s"))
    s = json.loads(out)["totals"]
    print(f"  peak RSS {rss:.1f} MiB, {s['requests']} requests, {s['failures']} failures, "
          f"connections {s['connections_opened']}")
    return {"peak_rss_mib": rss, "failures": s["failures"]}


def download(_):
    size = 1 << 30
    out, wall, _, rss = run_child(onrush(f"{URL}/bytes/{size}", "-c", "1", "-n", "5"))
    s = json.loads(out)["totals"]
    ours = s["bytes_in"] / wall / 1e6
    _, cwall, _, crss = run_child(["taskset", "-c", "0", "sh", "-c",
                                  f"for i in 1 2 3 4 5; do curl -s -o /dev/null {URL}/bytes/{size}; done"])
    theirs = 5 * size / cwall / 1e6
    print(f"  onrush {ours:.0f} MB/s (peak RSS {rss:.1f} MiB), curl {theirs:.0f} MB/s "
          f"(peak RSS {crss:.1f} MiB): ratio {ours / theirs:.2f}")
    return {"ratio": ours / theirs, "peak_rss_mib": rss}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=["open-rate", "many-vus", "download"])
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    server = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--addr", ADDR, "--threads", "1"],
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        fn = {"open-rate": open_rate, "many-vus": many_vus, "download": download}[a.check]
        results = []
        for r in range(a.rounds):
            print(f"round {r + 1}:", flush=True)
            results.append(fn(a))
        print("median: " + ", ".join(f"{k} {statistics.median(x[k] for x in results):.3f}" for k in results[0]))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()


if __name__ == "__main__":
    main()
