#!/usr/bin/env python3
"""CPU per command: onrush-redis against redis-benchmark, same commands, same server, one run.

Starts its own redis-server on a free loopback port (pinned to CPU 1, killed by its PID at the
end), then alternates the two clients (each pinned to CPU 0, one worker/thread, 50 connections,
no pipelining) for --rounds rounds on SET and GET of a fixed key and 3-byte value (what
`redis-benchmark -t set,get` sends), and prints each round's CPU microseconds per command (user +
system, the client process's own rusage) and the medians' ratio.

    python3 bench/redis.py [--bin target/release/onrush-redis] [--requests 200000] [--rounds 5]
                           [--instructions]

--instructions adds user-space instructions per command, whole process, of both clients under
valgrind (cachegrind, no cache simulation): the difference between a run of 20,000 and one of
60,000 commands, divided by 40,000 (start-up and shutdown cancel out).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_of(argv):
    """Runs argv; returns (user + system seconds of the child, its exit code)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{argv[0]} failed ({code}): {err[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def write_plan(tmp, command, cmd, port, clients, per_vu):
    path = os.path.join(tmp, f"{command}-{clients * per_vu}.yaml")
    with open(path, "w") as f:
        f.write(f"scenarios:\n  - name: bench\n    load: {{ vus: {clients}, iterations: {per_vu} }}\n"
                f"    steps:\n      - {{ redis: 127.0.0.1:{port}, command: {cmd} }}\n")
    return path


def instructions(argv):
    """User-space instructions of the whole process under cachegrind."""
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"] + argv,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True).stderr
    for line in out.splitlines():
        if "I" in line and "refs:" in line:
            return int(line.split("refs:")[1].strip().replace(",", ""))
    sys.exit(f"no instruction count from valgrind: {out[-2000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "..", "target", "release", "onrush-redis"))
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--instructions", action="store_true")
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        ["taskset", "-c", "1", "redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("redis-server did not start")
                time.sleep(0.05)
        per_vu = args.requests // args.clients
        n = per_vu * args.clients
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for command in ["SET", "GET"]:
                plan = os.path.join(tmp, f"{command}.yaml")
                cmd = f'[SET, "key:__rand_int__", xxx]' if command == "SET" else '[GET, "key:__rand_int__"]'
                with open(plan, "w") as f:
                    f.write(
                        f"scenarios:\n  - name: bench\n    load: {{ vus: {args.clients}, iterations: {per_vu} }}\n"
                        f"    steps:\n      - {{ redis: 127.0.0.1:{port}, command: {cmd} }}\n")
                onrush, reference = [], []
                for _ in range(args.rounds):
                    onrush.append(cpu_of(["taskset", "-c", "0", args.bin, "run", plan, "-t", "1", "-q",
                                          "--no-preflight", "--out", os.path.join(tmp, "out")]) / n * 1e6)
                    reference.append(cpu_of(["taskset", "-c", "0", "redis-benchmark", "-p", str(port),
                                             "-t", command.lower(), "-n", str(n), "-c", str(args.clients),
                                             "--threads", "1", "-q"]) / n * 1e6)
                results[command] = (onrush, reference)
                if args.instructions:
                    counts = {}
                    for name, make in [
                        ("onrush-redis", lambda k: (write_plan(tmp, command, cmd, port, args.clients, k // args.clients),
                                                    [args.bin, "run", os.path.join(tmp, f"{command}-{k}.yaml"), "-t", "1", "-q",
                                                     "--no-preflight", "--out", os.path.join(tmp, "out")])[1]),
                        ("redis-benchmark", lambda k: ["redis-benchmark", "-p", str(port), "-t", command.lower(),
                                                       "-n", str(k), "-c", str(args.clients), "--threads", "1", "-q"]),
                    ]:
                        counts[name] = (instructions(make(60_000)) - instructions(make(20_000))) / 40_000
                    print(f"{command}: instructions per command: onrush-redis {counts['onrush-redis']:,.0f}, "
                          f"redis-benchmark {counts['redis-benchmark']:,.0f}: "
                          f"{counts['onrush-redis'] / counts['redis-benchmark']:.2f}x")
                ratio = statistics.median(onrush) / statistics.median(reference)
                print(f"{command}: onrush-redis {statistics.median(onrush):.2f} us/command "
                      f"(rounds {', '.join(f'{x:.2f}' for x in onrush)}), redis-benchmark "
                      f"{statistics.median(reference):.2f} (rounds {', '.join(f'{x:.2f}' for x in reference)}): "
                      f"{ratio:.2f}x")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
