"""Benchmark: generation time per graph, and hirfuzz's own share of a campaign's wall time.

    python tools/bench_generate.py [--graphs 200] [--campaign-cases 40]

Generation is timed in this process (one core, no TVM), with coverage persisting across
graphs as in a campaign, guided and unguided side by side. The overhead share comes from
a real campaign's summary.json: wall time minus time spent in TVM (building, running,
starting workers, re-running reproducers), over wall time.
"""
from __future__ import annotations

import argparse
import json
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
from hirfuzz.core.spec import load_specs  # noqa: E402


def time_generation(specs, n_ops: int, graphs: int, guided: bool, seed: int = 0) -> list[float]:
    rng, cov = np.random.default_rng(seed), Coverage()
    times = []
    for _ in range(graphs):
        t0 = time.perf_counter()
        generate_graph(specs, rng, n_ops, cov, guided=guided)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def campaign_overhead(cases: int, ops: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        subprocess.run([sys.executable, "-m", "hirfuzz", "--iterations", str(cases), "--ops", str(ops),
                        "--out", str(out), "--no-progress", "--seed", "1"], cwd=ROOT, check=True,
                       capture_output=True)
        return json.loads((out / "summary.json").read_text())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=200)
    ap.add_argument("--campaign-cases", type=int, default=40)
    args = ap.parse_args()
    specs = load_specs()
    print(f"ops in specs: {len(specs.ops)}")
    print(f"{'ops':>4} {'guided median ms':>17} {'p90':>7} {'random median ms':>17} {'guided/random':>14}")
    for n in (10, 20, 50):
        g = time_generation(specs, n, args.graphs, True)
        r = time_generation(specs, n, args.graphs, False)
        gm, rm = statistics.median(g), statistics.median(r)
        p90 = sorted(g)[int(0.9 * len(g))]
        print(f"{n:>4} {gm:>17.2f} {p90:>7.2f} {rm:>17.2f} {gm / rm:>14.2f}")
    if args.campaign_cases:
        s = campaign_overhead(args.campaign_cases, 20)
        print(f"campaign: {s['cases']} cases of 20 ops in {s['elapsed_s']:.1f}s; in TVM {s['time_in_tvm_s']:.1f}s "
              f"(build+run {s['time_building_running_s']:.1f}s, worker start {s['time_starting_workers_s']:.1f}s, "
              f"reproducer checks {s['time_verifying_reproducers_s']:.1f}s); generation {s['generation_s']:.2f}s")
        print(f"hirfuzz's own share of wall time: {100 * s['overhead_share']:.2f}%")


if __name__ == "__main__":
    main()
