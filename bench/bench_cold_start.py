"""How long does the first ``cmtm optimize`` take on an empty Numba cache?

Runs ``cmtm optimize`` on the paper's case (c) (``chain3``, joint velocity, acceleration,
jerk, torque and torque rate, equal weights, limits [-pi, pi], files written to a temporary
folder) in a fresh process with an empty temporary NUMBA_CACHE_DIR, --runs times, and
prints per run the seconds to its first line of output (stdout or stderr) and to its end,
with the solve time it reports, against the issue's targets (first line <= 5 s, end <= 60
s). The cache and the output folder are removed afterwards.

Run: python bench/bench_cold_start.py [--runs N] [--json PATH]
"""
import argparse
import json
import math
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COSTS = "joint_velocity,joint_acceleration,joint_jerk,joint_torque,joint_torque_rate"
TARGETS = {"first_line_s": 5.0, "total_s": 60.0}


def cold_run():
    """(seconds to the first output line, seconds to the end, the lines) of one cold run."""
    cache, out = tempfile.mkdtemp(prefix="cmtm-cold-cache-"), tempfile.mkdtemp(prefix="cmtm-cold-")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "ioc.commands.cli", "optimize", "--model", "chain3", "--costs",
               COSTS, "--weights", "1,1,1,1,1", f"--limits={-math.pi},{math.pi}", "--out",
               out]
    started = time.perf_counter()
    try:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        first, lines = None, []
        selector = selectors.DefaultSelector()
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                line = key.fileobj.readline()
                if not line:
                    selector.unregister(key.fileobj)
                    continue
                first = time.perf_counter() - started if first is None else first
                lines.append(line.rstrip())
        process.wait()
        total = time.perf_counter() - started
        if process.returncode != 0:
            raise SystemExit(f"bench_cold_start: cmtm optimize exited {process.returncode}:\n"
                             + "\n".join(lines[-5:]))
        return first, total, lines
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(f"cmtm optimize, case (c), empty Numba cache; targets: first line <= "
          f"{TARGETS['first_line_s']:g} s, end <= {TARGETS['total_s']:g} s")
    print(f"{'run':>3s} {'first line s':>12s} {'total s':>8s}  solve line")
    rows = []
    for run in range(args.runs):
        load = os.getloadavg()[0]
        first, total, lines = cold_run()
        solve_line = next((line for line in lines if line.startswith(("converged", "stalled"))),
                          "")
        rows.append({"first_line_s": first, "total_s": total, "load": load,
                     "summary": solve_line})
        print(f"{run:3d} {first:12.1f} {total:8.1f}  {solve_line[:80]}", flush=True)
    met = {key: all(row[key] <= limit for row in rows) for key, limit in TARGETS.items()}
    print(f"first line target {'met' if met['first_line_s'] else 'NOT met'}, end target "
          f"{'met' if met['total_s'] else 'NOT met'}; {os.cpu_count()} cores, load average "
          f"(1 min) at the starts {[round(row['load'], 1) for row in rows]}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
