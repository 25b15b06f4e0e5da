"""Benchmark: faulty passes found by pass-directed generation, against undirected fuzzing.

    python tools/bench_pass_directed.py [--time 180] [--ops 20] [--passes A,B] [--seed 0]

Each faulty pass of tests/relax/faulty/ (each wrong on one pattern: one op with one kind
of input, one dtype, one pair of ops, one attribute value, one broadcast shape, one IR
feature, modules with several functions) is pinned (--pass-seq) in two campaigns run side
by side, one with direction and one with --no-direct, each with --jobs 1 (one core each
on a 2-core machine), given only the pass's catalog entry with its module on PYTHONPATH,
as a user would. Per pass and mode the table gives: found (a confirmed finding naming the
pass), the seconds from the campaign's start (its probe included) to the first one saved
in findings/, the cases run in the --time budget, and summary.json's builds_saved.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "relax" / "faulty"
PASSES = ("SubtractScalarConst", "MaximumInt8", "AbsOfNegative", "SumKeepdims", "BroadcastAdd", "RaiseOnIf",
          "RaiseOnSeveralFunctions")
MODES = {"directed": [], "undirected": ["--no-direct"]}


def start(name: str, mode: str, folder: Path, args) -> tuple[subprocess.Popen, float]:
    """One campaign, its catalog in a folder of its own and its module on PYTHONPATH only."""
    catalog = folder / "catalog" / "faulty.yaml"
    catalog.parent.mkdir(parents=True)
    catalog.write_text((FAULTY / "faulty.yaml").read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(FAULTY)])}
    cmd = [sys.executable, "-m", "hirfuzz", "--passes", str(catalog), "--pass-seq", name, "--time", str(args.time),
           "--ops", str(args.ops), "--seed", str(args.seed), "--jobs", "1", "--out", str(folder / "out"),
           "--no-progress", *MODES[mode]]
    log = open(folder / "log.txt", "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder), time.time()


def result(name: str, folder: Path, started: float) -> dict:
    out = folder / "out"
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
    found = [f for f in summary.get("findings", []) if name in f["message"]]
    first = min((os.path.getmtime(out / f["path"] / "repro.py") - started for f in found), default=None)
    return {"found": bool(found), "first_s": first, "cases": summary.get("cases", 0),
            "builds_saved": summary.get("builds_saved", 0),
            "unconfirmed": sum(1 for f in summary.get("unconfirmed", []) if name in f["message"])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--time", type=float, default=180.0, help="fuzzing seconds per campaign (default 180)")
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--passes", default=",".join(PASSES), help="which faulty passes (default: all)")
    p.add_argument("--keep", help="keep the campaigns' folders here")
    args = p.parse_args(argv)
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-directed-"))
    rows = []
    for name in args.passes.split(","):
        runs = {mode: start(name, mode, base / name / mode, args) for mode in MODES}
        for mode, (proc, started) in runs.items():
            proc.wait()
            rows.append({"pass": name, "mode": mode, **result(name, base / name / mode, started)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"faulty passes, each pinned; --time {args.time:g} --ops {args.ops} --seed {args.seed} --jobs 1, "
          "directed and undirected side by side\n")
    print("| pass | mode | found | first confirmed finding (s) | cases | builds saved |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        first = f"{r['first_s']:.0f}" if r["first_s"] is not None else "-"
        print(f"| {r['pass']} | {r['mode']} | {'yes' if r['found'] else 'no'} | {first} | {r['cases']} | "
              f"{r['builds_saved']} |")
    print(f"\nfolders: {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
