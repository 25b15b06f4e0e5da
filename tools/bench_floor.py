"""Benchmark: how close a campaign's worker time comes to TVM's own build and load cost.

    python tools/bench_floor.py [--cases 20] [--ops 20] [--seed 7] [--no-cache] [--repeat 1]

Runs a short Relax campaign (--jobs 1, no reduction or reproducer checks, so the figure is
fuzzing alone), keeping each case it judged. Then, in this process, for the same cases:
lowers each, makes its mutant, runs each configuration's pass sequence, and times only
the bare TVM build and load (`relax.build`, then `relax.VirtualMachine`) of every module a
configuration builds, once per distinct (module, build settings) (a module built twice for
a case needs one build). That sum is the floor. The campaign's time per case is the
worker's time on it plus the pipe (stats.jsonl "timings": worker + transfer), and

    floor_ratio = campaign time over all cases / floor

is printed last (issue 17's target: at most 1.25). TVM runs single-threaded here as in
workers (TVM_NUM_THREADS=1). The machine is shared and its load swings (3x seen between
two runs a minute apart): --repeat N runs campaign and floor N times, one after the
other, and prints the median ratio of the pairs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TVM_NUM_THREADS", "1")  # as the pool's workers run


def run_campaign(out: Path, args) -> tuple[dict, list, list]:
    """(summary, stats records, cases judged) of a short campaign."""
    from campaign_fingerprint import run_recording  # tools/, beside this script
    from hirfuzz.campaign.coordinator import Campaign, Settings
    from hirfuzz.core.spec import load_specs
    settings = Settings(out=str(out), jobs=1, seed=args.seed, iterations=args.cases, ops=args.ops,
                        reduce=False, verify=False)
    summary, seen = run_recording(Campaign(settings, load_specs(), progress=False))
    stats = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    return summary, stats, seen


def floor_of(case, dialect) -> tuple[float, int]:
    """(seconds of bare build + load, builds) for the distinct modules a case builds."""
    from hirfuzz.dialects.base import ExecutorCannotTake
    from hirfuzz.worker import BuildCache, _traits
    request = case.request
    try:
        modules = [dialect.lower(request)]
        dialect.check_well_formed(modules[0])
    except Exception:  # noqa: BLE001 - a case that never gets to a build has no floor
        return 0.0, 0
    if request.get("mutation"):
        try:
            modules.append(dialect.mutate(modules[0], request["mutation"]["seed"], request["mutation"]["count"],
                                          _traits(request))[0])
        except Exception:  # noqa: BLE001
            pass
    seen = BuildCache(64)
    total, builds = 0.0, 0
    for config in case.configs:
        if config.get("module", 0) >= len(modules):
            continue
        module = modules[config.get("module", 0)]
        if config.get("plain") and request.get("plan"):
            module = dialect.lower({**request, "plan": None})
        try:
            module = dialect.apply_passes(module, config)
        except Exception:  # noqa: BLE001 - no build follows a failed pass sequence
            continue
        key = BuildCache.key(module, config)
        if seen.lookup(module, key) is not None:
            continue
        seen.store(module, key, ("ok", None))
        t0 = time.perf_counter()
        try:
            dialect.load(dialect.build(module, config), config)
        except ExecutorCannotTake:
            continue
        except Exception:  # noqa: BLE001 - a failing build costs what it cost
            pass
        total += time.perf_counter() - t0
        builds += 1
    return total, builds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/bench_floor.py")
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-cache", action="store_true", help="campaign without build reuse (HIRFUZZ_BUILD_CACHE=0)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    if args.no_cache:
        os.environ["HIRFUZZ_BUILD_CACHE"] = "0"
    ratios = [measure(args) for _ in range(max(1, args.repeat))]
    import statistics
    print(f"floor_ratio {statistics.median(ratios):.3f}")
    return 0


def measure(args) -> float:
    """One campaign and its floor; prints both, returns their ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        summary, stats, cases = run_campaign(Path(tmp) / "out", args)
    campaign_s = sum(r["timings"].get("worker", 0.0) + r["timings"].get("transfer", 0.0) for r in stats)
    totals = summary["stage_totals_s"]
    from hirfuzz.dialects import load_dialect
    dialect = load_dialect("relax")
    floor_s, builds = 0.0, 0
    for case in cases:
        s, n = floor_of(case, dialect)
        floor_s += s
        builds += n
    print(f"cases {len(stats)} at {args.ops} ops, seed {args.seed}, build cache {'off' if args.no_cache else 'on'}")
    print(f"campaign worker+pipe time {campaign_s:.2f}s ({campaign_s / max(1, len(stats)):.3f}s/case); "
          f"of it build {totals.get('build', 0):.2f}s, load {totals.get('load', 0):.2f}s, "
          f"passes {totals.get('passes', 0):.2f}s, run {totals.get('run', 0):.2f}s, "
          f"lower+well_formed+mutate {sum(totals.get(k, 0) for k in ('lower', 'well_formed', 'mutate')):.2f}s, "
          f"transfer {totals.get('transfer', 0):.2f}s; builds saved {summary['builds_saved']}")
    print(f"floor (bare build + load of the same {builds} distinct builds) {floor_s:.2f}s "
          f"({floor_s / max(1, len(stats)):.3f}s/case)")
    ratio = campaign_s / floor_s if floor_s > 0 else float("nan")
    print(f"pair: campaign / floor {ratio:.3f}", flush=True)
    return ratio


if __name__ == "__main__":
    sys.exit(main())
