#!/usr/bin/env python3
"""Times commands in alternating rounds and prints their ratios to the first one.

    scripts/bench-alternate.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]

Each round runs every command once, in turn (the order reverses every other round), with
its standard output sent to /dev/null; a warm-up round comes first. Wall time is measured
around each process, CPU time (user + system) from its rusage. For every command: the mean,
standard deviation, median and fastest wall time, the mean CPU time, and its throughput
ratio to the first command (ratio of the means, of the medians, and the median of the
rounds' ratios). `NAME=ENV:K=V,K2=V2;;COMMAND` sets environment variables for one command.
A command that fails stops the script. Used for bench/history/replay-and-serve-redis.md (seventh pass):

    scripts/bench-alternate.py 30 \\
      "base=OLD/loopguard replay --config examples/openclaw.json5 --json small.jsonl" \\
      "new=target/release/loopguard replay --config examples/openclaw.json5 --json small.jsonl"
"""

import os
import statistics
import sys
import time


def parse(arg):
    name, _, cmd = arg.partition("=")
    if not name or not cmd:
        sys.exit(f"bench-alternate: expected NAME=COMMAND, got {arg!r}")
    env = dict(os.environ)
    if cmd.startswith("ENV:"):
        assignments, _, cmd = cmd[4:].partition(";;")
        for kv in assignments.split(","):
            key, _, value = kv.partition("=")
            env[key] = value
    return name, cmd.split(), env


def run(argv, env, devnull):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(devnull, 1)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"bench-alternate: {' '.join(argv)} failed (wait status {status})")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    if rounds < 2:
        sys.exit("bench-alternate: at least 2 rounds")
    cmds = [parse(a) for a in sys.argv[2:]]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _, argv, env in cmds:
        run(argv, env, devnull)
    times = {name: [] for name, _, _ in cmds}
    load_before = os.getloadavg()[0]
    for r in range(rounds):
        for name, argv, env in cmds if r % 2 == 0 else cmds[::-1]:
            times[name].append(run(argv, env, devnull))
    load_after = os.getloadavg()[0]
    print(f"rounds {rounds}, load average {load_before:.2f} -> {load_after:.2f}")
    first = times[cmds[0][0]]
    first_mean = statistics.mean(w for w, _ in first)
    first_median = statistics.median(w for w, _ in first)
    for name, _, _ in cmds:
        walls = [w for w, _ in times[name]]
        cpus = [c for _, c in times[name]]
        ratios = [a[0] / b[0] for a, b in zip(first, times[name])]
        print(
            f"{name:12s} wall mean {statistics.mean(walls) * 1000:6.1f} ms"
            f" (sd {statistics.stdev(walls) * 1000:5.1f})"
            f" median {statistics.median(walls) * 1000:6.1f} min {min(walls) * 1000:6.1f}"
            f"  cpu mean {statistics.mean(cpus) * 1000:6.1f} ms"
            f" | ratio of means {first_mean / statistics.mean(walls):.3f}"
            f" medians {first_median / statistics.median(walls):.3f}"
            f" median of round ratios {statistics.median(ratios):.3f}"
        )


if __name__ == "__main__":
    main()
