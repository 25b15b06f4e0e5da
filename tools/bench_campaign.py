"""Benchmark: campaign throughput at --jobs 1 and --jobs 2, overhead, and worker memory.

    python tools/bench_campaign.py [--cases 80] [--ops 20] [--repeat 3] [--full] [--rss-cases 1000]

Throughput runs use the same seed and settings at --jobs 1 and --jobs 2, one right after
the other, --repeat times; each pair gives a ratio and the median ratio is the figure
(the machine is shared and noisy: compare ratios, not seconds). Two ratios are given: of
the whole runs' wall times, and of the fuzzing throughput, cases over the campaign's
elapsed time less the seconds its workers took to start (importing TVM, a fixed cost of
every campaign that a short benchmark would otherwise count as poor scaling). By default findings are
saved without reduction or reproducer checks, so the figure is the workers' fuzzing
throughput; --full runs the campaign as users do, with both (they run on a worker lent
by the pool, so they are part of the throughput). Each run also reports hirfuzz's own
share of the workers' capacity, the workers' busy share and the CPU time of the whole
process tree. The memory run sends --rss-cases cases of 5 operators to one worker that
is never recycled and reports its resident memory at the first and the last case.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.core.coverage import Coverage  # noqa: E402
from hirfuzz.core.generate import generate_graph  # noqa: E402
from hirfuzz.core.inputs import choose_inputs  # noqa: E402
from hirfuzz.campaign.sandbox import Worker  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.core.calls import call_records  # noqa: E402
from hirfuzz.protocol import encode_array  # noqa: E402


def campaign(jobs: int, cases: int, ops: int, full: bool) -> dict:
    """One campaign; its summary plus the wall and CPU time of the whole process tree."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "hirfuzz", "--iterations", str(cases), "--ops", str(ops),
               "--jobs", str(jobs), "--out", str(out), "--no-progress", "--seed", "7"]
        if not full:
            cmd += ["--no-reduce", "--no-verify"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary = json.loads((out / "summary.json").read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {**summary, "wall_s": wall, "cpu_s": cpu}


def fuzzing_seconds(s: dict) -> float:
    """The campaign's elapsed time less its workers' start: the time its cases took."""
    return s["elapsed_s"] - s["time_starting_workers_s"]


def describe(jobs: int, s: dict) -> str:
    return (f"--jobs {jobs}: {s['cases']} cases in {s['wall_s']:.1f}s = {s['cases'] / s['wall_s']:.3f} cases/s; "
            f"own share {100 * s['overhead_share']:.1f}%, workers busy {100 * s['worker_busy_share']:.0f}%, "
            f"CPU {s['cpu_s'] / s['wall_s']:.2f} cores, {len(s['findings'])} findings")


def worker_memory(cases: int) -> tuple[int, int]:
    specs = load_specs()
    rng, cov = np.random.default_rng(0), Coverage()
    with tempfile.TemporaryDirectory() as tmp:
        w = Worker(Path(tmp) / "w.log", recycle_after=None)
        first = last = 0
        try:
            for i in range(cases):
                g = generate_graph(specs, rng, 5, cov)
                chosen = choose_inputs(g, specs, np.random.default_rng(i))
                req = {"case": i, "graph": g.to_json(), "calls": call_records(g, specs), "run": chosen.runnable,
                       "inputs": [encode_array(chosen.values[n.id]) for n in g.variables]}
                reply = w.run_one(req, 60)
                if not isinstance(reply, dict):
                    continue
                first = first or reply["rss_kb"]
                last = reply["rss_kb"]
        finally:
            w.close()
    return first, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=80)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3, help="pairs of throughput runs (0: none)")
    ap.add_argument("--full", action="store_true", help="reduce findings and check their reproducers too")
    ap.add_argument("--rss-cases", type=int, default=1000)
    args = ap.parse_args()
    ratios, fuzzing_ratios = [], []
    for i in range(args.repeat):
        runs = {jobs: campaign(jobs, args.cases, args.ops, args.full) for jobs in (1, 2)}
        for jobs, s in runs.items():
            print(f"pair {i + 1} {describe(jobs, s)}", flush=True)
        ratios.append(runs[1]["wall_s"] / runs[2]["wall_s"])  # same cases: the throughput ratio
        fuzzing_ratios.append(fuzzing_seconds(runs[1]) / fuzzing_seconds(runs[2]))
        print(f"pair {i + 1} throughput --jobs 2 / --jobs 1: {ratios[-1]:.2f} "
              f"(fuzzing, less the workers' start: {fuzzing_ratios[-1]:.2f})", flush=True)
    if ratios:
        print(f"throughput --jobs 2 / --jobs 1 over {args.repeat} pairs: median {statistics.median(ratios):.2f} "
              f"(all: {', '.join(f'{r:.2f}' for r in ratios)}); fuzzing throughput: median "
              f"{statistics.median(fuzzing_ratios):.2f} (all: {', '.join(f'{r:.2f}' for r in fuzzing_ratios)})")
    if args.rss_cases:
        first, last = worker_memory(args.rss_cases)
        print(f"worker resident memory: {first / 1024:.0f} MiB at the first case, {last / 1024:.0f} MiB at case "
              f"{args.rss_cases} (ratio {last / max(first, 1):.2f})")


if __name__ == "__main__":
    main()
