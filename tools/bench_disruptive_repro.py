"""How long a disruptive finding's scripts are: repro.py (the violating call alone, where
it fails alike) beside check.py (hirfuzz's harness with the whole program, which was
repro.py before issue 15 item 5), and how often the call alone reproduced.

    python tools/bench_disruptive_repro.py --ir relax --time 120 --out /tmp/disrupt-relax
    python tools/bench_disruptive_repro.py --out /tmp/disrupt-relax --no-run   # an earlier campaign

Both scripts come from the same findings of one campaign, so the ratio is measured side by
side. Prints one JSON object: line counts (median, max) of each, their ratio, and the
findings by what their repro.py holds (summary.json's disruptive.reproducers).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_campaign(ir: str, seconds: int, out: Path, seed: int):
    argv = [sys.executable, "-m", "hirfuzz", "--mode", "disruptive", "--ir", ir, "--time", str(seconds),
            "--out", str(out), "--seed", str(seed), "--no-progress"]
    if ir == "relay":
        argv += ["--tvm-python", "relay"]
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def spread(counts: list[int]) -> dict:
    return {"median": statistics.median(counts), "max": max(counts)} if counts else {}


def measure(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    short, harness, fallback = [], [], []
    for row in summary["findings"]:
        folder = out / row["path"]
        if (folder / "check.py").exists():
            short.append(lines(folder / "repro.py"))
            harness.append(lines(folder / "check.py"))
        else:  # the harness is repro.py: the call alone did not fail alike
            fallback.append(lines(folder / "repro.py"))
    every_repro, every_harness = short + fallback, harness + fallback
    ratio = round(statistics.median(every_repro) / statistics.median(every_harness), 3) if every_repro else None
    return {"findings": len(summary["findings"]), "unconfirmed": len(summary["unconfirmed"]),
            "reproducers": summary["disruptive"].get("reproducers"),
            "repro_lines": spread(every_repro), "call_alone_lines": spread(short),
            "harness_lines": spread(every_harness), "median_ratio_repro_to_harness": ratio}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ir", default="relax", choices=["relax", "relay"])
    parser.add_argument("--time", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-run", action="store_true", help="measure the campaign already in --out")
    args = parser.parse_args()
    if not args.no_run:
        run_campaign(args.ir, args.time, args.out, args.seed)
    print(json.dumps(measure(args.out), indent=2))


if __name__ == "__main__":
    main()
