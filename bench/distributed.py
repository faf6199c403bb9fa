#!/usr/bin/env python3
"""What a distributed run costs: (1) two agents against one process, (2) the controller's own
cost with many agents.

1. split: the same closed plan (50 VUs, GET /, keep-alive) against `onrush serve --threads 1`
   pinned to CPU 1, run (a) as one process with two workers and (b) as a controller with two
   agents of one worker each. The machine has two cores, so every load process shares CPU 0:
   both runs get the same CPU budget, and the ratio says what splitting the load across
   processes (and the controller beside them) costs. Reported per round and as medians:
   requests/s, and CPU µs per request of all the tool's processes (controller included).
2. controller: N agents (default 50, one worker each, on CPU 1 with the target), a plan of 20
   steps at a light open rate, for --seconds. Reported: the controller's CPU % of a core (its
   own user+system time over the run's wall time), its peak RSS (VmHWM), and the bytes per
   second each agent streamed (the sizes of the intervals and generator lines it sent, which
   the controller keeps under agents/NAME/).

Loopback only; every run is bounded by its plan's duration and a timeout, and only processes
this script started are stopped, by PID.

usage: bench/distributed.py [split|controller|both] [--rounds 3] [--seconds 10] [--agents 50]
                            [--onrush PATH]
"""
import argparse, json, os, re, resource, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONRUSH = os.path.join(ROOT, "target", "release", "onrush")


def start_target(port):
    proc = subprocess.Popen(["taskset", "-c", "1", ONRUSH, "serve", "--addr", f"127.0.0.1:{port}",
                             "--threads", "1"], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def summary_of(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def vm_hwm_kib(pid):
    """VmHWM of an onrush process, once its exec is through (before, its status can show the
    parent's memory map: see crates/onrush/tests/hostile.rs)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return 0
    if "\nName:\tonrush" not in "\n" + text:
        return 0
    m = re.search(r"VmHWM:\s+(\d+)", text)
    return int(m.group(1)) if m else 0


def start_controller(plan, out, agents, cpu):
    proc = subprocess.Popen(["taskset", "-c", cpu, ONRUSH, "run", plan, "--agents", str(agents),
                             "--listen", "127.0.0.1:0", "--agents-wait", "120", "--out", out, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r" on 127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    sys.exit("the controller did not say where it listens")


def start_agents(port, token, n, cpu, work):
    return [subprocess.Popen(["taskset", "-c", cpu, ONRUSH, "agent", "--connect", f"127.0.0.1:{port}",
                              "--token-file", token, "--name", f"a{i:03}", "-t", "1", "--wait", "30",
                              "-q", "--work-dir", os.path.join(work, f"a{i:03}")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(n)]


def wait_all(procs, timeout):
    deadline = time.time() + timeout
    for p in procs:
        try:
            p.wait(max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            sys.exit(f"pid {p.pid} still running after {timeout} s: killed")


def split(rounds, seconds):
    port = 18091
    target = start_target(port)
    tmp = tempfile.mkdtemp(prefix="onrush-bench-dist-")
    plan = os.path.join(tmp, "plan.yaml")
    with open(plan, "w") as f:
        f.write(f"target: http://127.0.0.1:{port}\nscenarios:\n  - name: s\n"
                f"    load: {{ vus: 50, duration: {seconds}s }}\n    steps: [ {{ get: / }} ]\n")
    rows = {"one process, 2 workers": [], "controller + 2 agents": []}
    try:
        for r in range(rounds):
            order = list(rows) if r % 2 == 0 else list(reversed(rows))
            for kind in order:
                out = os.path.join(tmp, f"r{r}-{'one' if kind.startswith('one') else 'dist'}")
                before = children_cpu()
                if kind.startswith("one"):
                    subprocess.run(["taskset", "-c", "0", ONRUSH, "run", plan, "-t", "2", "-q",
                                    "--out", out], check=True, stdout=subprocess.DEVNULL,
                                   timeout=seconds + 60)
                else:
                    ctl, cport = start_controller(plan, out, 2, "0")
                    agents = start_agents(cport, os.path.join(out, "agent-token"), 2, "0",
                                          os.path.join(tmp, f"work{r}"))
                    wait_all([ctl] + agents, seconds + 90)
                cpu = children_cpu() - before
                s = summary_of(out)
                n = s["totals"]["requests"]
                rate = n / s["run"]["duration_s"]
                rows[kind].append((rate, cpu / n * 1e6))
                print(f"round {r + 1} {kind:24} {rate:9.0f} req/s {cpu / n * 1e6:6.2f} µs/req",
                      flush=True)
    finally:
        target.send_signal(signal.SIGTERM)
        target.wait()
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in rows.items()}
    (r1, c1), (r2, c2) = med["one process, 2 workers"], med["controller + 2 agents"]
    print(f"\nmedians of {rounds}: one process {r1:.0f} req/s {c1:.2f} µs/req; "
          f"2 agents {r2:.0f} req/s {c2:.2f} µs/req; ratio (agents/one) rate {r2 / r1:.3f}, "
          f"CPU per request {c2 / c1:.3f}")


def controller(agents, seconds):
    port = 18092
    target = start_target(port)
    tmp = tempfile.mkdtemp(prefix="onrush-bench-ctl-")
    plan = os.path.join(tmp, "plan.yaml")
    steps = "\n".join(f"      - {{ name: step{i:02}, get: / }}" for i in range(20))
    with open(plan, "w") as f:
        f.write(f"target: http://127.0.0.1:{port}\nscenarios:\n  - name: s\n"
                f"    load: {{ rate: {agents * 2}/s, duration: {seconds}s, max_vus: {agents * 4} }}\n"
                f"    steps:\n{steps}\n")
    out = os.path.join(tmp, "out")
    before = children_cpu()
    try:
        ctl, cport = start_controller(plan, out, agents, "0")
        procs = start_agents(cport, os.path.join(out, "agent-token"), agents, "1",
                             os.path.join(tmp, "work"))
        peak = 0
        while ctl.poll() is None:
            peak = max(peak, vm_hwm_kib(ctl.pid))
            time.sleep(0.2)
        # Only the controller has been reaped since `before`: the agents and the target are
        # waited for below.
        cpu = children_cpu() - before
        wait_all(procs, 60)
    finally:
        target.send_signal(signal.SIGTERM)
        target.wait()
    s = summary_of(out)
    wall = s["run"]["duration_s"]
    sent = []
    for name in sorted(os.listdir(os.path.join(out, "agents"))):
        d = os.path.join(out, "agents", name)
        size = sum(os.path.getsize(os.path.join(d, f))
                   for f in ("intervals.jsonl", "generator.jsonl") if os.path.exists(os.path.join(d, f)))
        sent.append(size / wall)
    print(f"{agents} agents, 20 steps, {s['totals']['requests']} requests in {wall:.1f} s: "
          f"controller CPU {cpu / wall * 100:.1f}% of a core ({cpu:.2f} s), peak RSS {peak / 1024:.1f} MiB; "
          f"bytes/s per agent: median {statistics.median(sent):.0f}, max {max(sent):.0f}")


def main():
    global ONRUSH
    p = argparse.ArgumentParser()
    p.add_argument("what", nargs="?", default="both", choices=["split", "controller", "both"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--onrush", default=ONRUSH, help="the onrush binary to measure")
    a = p.parse_args()
    ONRUSH = a.onrush
    if not os.path.exists(ONRUSH):
        sys.exit(f"{ONRUSH} is missing: cargo build --release -p onrush")
    if a.what in ("split", "both"):
        split(a.rounds, a.seconds)
    if a.what in ("controller", "both"):
        controller(a.agents, max(a.seconds, 20))


if __name__ == "__main__":
    main()
