"""Benchmark: the same campaign on the local pool and on Ray, on this machine, side by side.

    unshare -n sh -c 'ip link set lo up && python tools/bench_ray.py [--cases 30] [--ops 20] [--jobs N] [--repeat 2]'

(in a loopback-only namespace Ray binds to 127.0.0.1; outside one it binds to the
machine's outward address, which works too). One Ray instance is started on this
machine first; then each pair runs the same seed and settings with the local pool of
--jobs workers and with --ray and --jobs workers (actors hosting the same sandbox), in
alternating order, with reductions and reproducer checks off so that the figure is the
workers' fuzzing throughput.

Per run: cases per second in the steady state (from the first judged case to the last,
so Ray's and the workers' start-up are left out; the whole run's rate is printed too),
and the coordinator's CPU seconds per case (this process: generating, judging, writing,
and with Ray the driver's own threads). The pair's ratio Ray / local is the overhead
figure (the machine is shared and noisy: compare ratios, not seconds). Less sensitive to
the load of a shared machine: what the transport adds per case, the coordinator's wait
for an answer less the worker's own time and its pipe (Ray's calls and object transfers),
as a share of the worker's time. How many workers one coordinator can feed is about
(worker seconds per case) / (coordinator CPU seconds per case).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.coordinator import Campaign, Settings  # noqa: E402
from hirfuzz.campaign.raypool import LOCAL, connect  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402


def own_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(jobs: int, cases: int, ops: int, ray: str | None) -> dict:
    """One campaign in this process: its summary, steady rate and coordinator CPU per case."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        settings = Settings(seed=7, iterations=cases, ops=ops, out=str(out), jobs=jobs, reduce=False,
                            verify=False, ray=ray)
        campaign = Campaign(settings, load_specs(), progress=False)
        cpu0, t0 = own_cpu_s(), time.monotonic()
        summary = campaign.run()
        wall, cpu = time.monotonic() - t0, own_cpu_s() - cpu0
        times = [json.loads(line)["t"] for line in (out / "stats.jsonl").read_text().splitlines()]
    cases = max(1, summary["cases"])
    steady = (len(times) - 1) / max(1e-9, max(times) - min(times))
    stages = campaign.counters.stage_s
    # Ray's calls: the coordinator's wait for an answer, less the worker's own time and its
    # pipe on the node (the local pool has only the pipe: nothing added)
    added = 0.0 if ray is None else (campaign.pool.case_s - stages.get("worker", 0.0)
                                     - stages.get("transfer", 0.0)) / cases
    return {"cases": summary["cases"], "wall_s": wall, "steady": steady, "rate": summary["cases"] / wall,
            "coord_cpu_per_case": cpu / cases, "worker_s_per_case": stages.get("worker", 0.0) / cases,
            "added_s_per_case": added, "nodes": summary["nodes"]}


def describe(name: str, r: dict) -> str:
    return (f"{name}: {r['cases']} cases, steady {r['steady']:.3f} cases/s (whole run {r['rate']:.3f}), "
            f"coordinator CPU {1000 * r['coord_cpu_per_case']:.1f} ms/case, "
            f"worker {r['worker_s_per_case']:.2f} s/case, transport adds {1000 * r['added_s_per_case']:.1f} ms/case "
            f"({100 * r['added_s_per_case'] / max(1e-9, r['worker_s_per_case']):.2f}% of the worker's time)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2, help="workers in both runs (default 2)")
    ap.add_argument("--repeat", type=int, default=2, help="pairs of runs")
    args = ap.parse_args()
    t0 = time.monotonic()
    connect(LOCAL)
    print(f"Ray started on this machine in {time.monotonic() - t0:.1f}s", flush=True)
    ratios, coord, added = [], [], []
    for i in range(args.repeat):
        order = [None, LOCAL] if i % 2 == 0 else [LOCAL, None]
        runs = {ray: run(args.jobs, args.cases, args.ops, ray) for ray in order}
        for ray in order:
            print(f"pair {i + 1} {describe('ray  ' if ray else 'local', runs[ray])}", flush=True)
        ratios.append(runs[LOCAL]["steady"] / runs[None]["steady"])
        coord += [runs[LOCAL]["coord_cpu_per_case"], runs[None]["coord_cpu_per_case"]]
        added.append(runs[LOCAL]["added_s_per_case"] / runs[LOCAL]["worker_s_per_case"])
        print(f"pair {i + 1} steady throughput ray / local: {ratios[-1]:.3f}; coordinator CPU per case "
              f"ray / local: {runs[LOCAL]['coord_cpu_per_case'] / runs[None]['coord_cpu_per_case']:.2f}", flush=True)
    median = statistics.median(ratios)
    print(f"steady throughput ray / local over {args.repeat} pairs: median {median:.3f} "
          f"(overhead {100 * (1 - median):.1f}%; all: {', '.join(f'{r:.3f}' for r in ratios)})")
    print(f"coordinator CPU per case: median {1000 * statistics.median(coord):.1f} ms; Ray adds a median "
          f"{100 * statistics.median(added):.2f}% of the worker's time per case")


if __name__ == "__main__":
    main()
