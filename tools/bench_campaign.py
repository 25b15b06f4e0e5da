"""Benchmark: campaign throughput at --jobs 1 and --jobs 2, overhead, and worker memory.

    python tools/bench_campaign.py [--cases 60] [--ops 20] [--rss-cases 1000]

The two throughput runs use the same seed and settings, one after the other in this
run, and are reported as a ratio (the machine is shared and noisy: compare ratios, not
seconds). The memory run sends --rss-cases cases of 5 operators to one worker that is
never recycled and reports its resident memory at the first and the last case.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.coverage import Coverage  # noqa: E402
from hirfuzz.generate import generate_graph  # noqa: E402
from hirfuzz.inputs import choose_inputs  # noqa: E402
from hirfuzz.sandbox import Worker  # noqa: E402
from hirfuzz.spec import load_specs  # noqa: E402
from hirfuzz.worker import encode_array  # noqa: E402


def campaign(jobs: int, cases: int, ops: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        # reduction and reproducer checks run alone in the coordinator: left out, so that
        # the figure is the workers' throughput
        subprocess.run([sys.executable, "-m", "hirfuzz", "--iterations", str(cases), "--ops", str(ops),
                        "--jobs", str(jobs), "--out", str(out), "--no-progress", "--seed", "7",
                        "--no-reduce", "--no-verify"],
                       cwd=ROOT, check=True, capture_output=True)
        return json.loads((out / "summary.json").read_text())


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
                req = {"case": i, "graph": g.to_json(), "run": chosen.runnable,
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
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--rss-cases", type=int, default=1000)
    args = ap.parse_args()
    runs = {jobs: campaign(jobs, args.cases, args.ops) for jobs in (1, 2)}
    for jobs, s in runs.items():
        print(f"--jobs {jobs}: {s['cases']} cases in {s['elapsed_s']:.1f}s = {s['cases'] / s['elapsed_s']:.2f} "
              f"cases/s; hirfuzz's own share of wall time {100 * s['overhead_share']:.1f}%")
    speedup = (runs[2]["cases"] / runs[2]["elapsed_s"]) / (runs[1]["cases"] / runs[1]["elapsed_s"])
    print(f"throughput --jobs 2 / --jobs 1: {speedup:.2f}")
    if args.rss_cases:
        first, last = worker_memory(args.rss_cases)
        print(f"worker resident memory: {first / 1024:.0f} MiB at the first case, {last / 1024:.0f} MiB at case "
              f"{args.rss_cases} (ratio {last / max(first, 1):.2f})")


if __name__ == "__main__":
    main()
