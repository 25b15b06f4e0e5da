"""Benchmark: distinct findings per hour at a few campaign settings, to choose the defaults.

    python tools/bench_settings.py [--time 600] [--seeds 1] [--settings ops=10 ops=20 ops=40]
                                   [--ir relax] [--keep DIR]

What decides the defaults (operators per graph, mutants per case) is how many distinct
findings a campaign files in an hour, not how many cases it runs. Every setting runs as a
user runs it (findings reduced and their reproducers checked) for --time seconds with
--jobs 1, all settings and seeds side by side at once, so that they share the machine
alike (it is shared and noisy: compare the rows, not the absolute figures). A setting is
`key=value` pairs joined by commas over the flags `ops`, `mutations`, `followups`
(--followup-mutants), `max_passes`, `check_cases`, `check_ops`, `pass_checks`, `gradients` (a share), `gradient_ops` and
`executors` (names joined by `+`, `none` for the baseline alone); --ir picks the IR.

Per setting the table gives the cases run, the distinct confirmed findings (signatures),
the distinct subjects they blame (the pass, or the kind and stage of a finding without
passes: a rough count of root causes), the distinct root causes by hirfuzz's own keys as
it keys saved findings now (tools/root_causes.py --saved: findings sharing a root key or a
lone-operator key are one; a hand count is the measure, this is its estimate), the
findings per hour of the campaign's whole wall time (fuzzing plus finishing its
reductions), and the findings at half time, from stats.jsonl.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from root_causes import root_causes, saved_keys  # noqa: E402  (the keys hirfuzz gives saved findings)
FLAGS = {"ops": "--ops", "mutations": "--mutations", "followups": "--followup-mutants",
         "max_passes": "--max-passes", "executors": "--executors", "check_cases": "--check-cases",
         "check_ops": "--check-ops", "gradients": "--gradients", "gradient_ops": "--gradient-ops",
         "pass_checks": "--pass-checks"}
SHARES = ("gradients",)  # keys whose value is a share from 0 to 1, not a count
NAMES = ("executors",)  # keys whose value is names joined by "+", not a number


def parse_setting(text: str) -> dict[str, int | str]:
    setting = {}
    for pair in text.split(","):
        key, _, value = pair.partition("=")
        if key in NAMES and value:
            setting[key] = value.replace("+", ",")
            continue
        if key in SHARES and value.replace(".", "", 1).isdigit():
            setting[key] = float(value)
            continue
        if key not in FLAGS or not value.isdigit():
            raise SystemExit(f"setting '{text}': expected key=N pairs over {', '.join(FLAGS)} "
                             f"(executors=A+B), got '{pair}'")
        setting[key] = int(value)
    return setting


def start(setting: dict, seed: int, out: Path, fuzz_s: float, ir: str = "relax") -> subprocess.Popen:
    flags = [arg for key, value in setting.items() for arg in (FLAGS[key], str(value))]
    cmd = [sys.executable, "-m", "hirfuzz", "--ir", ir, "--time", str(fuzz_s), "--seed", str(seed), "--jobs", "1",
           "--out", str(out), "--no-progress", *flags]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f"{out.name}.log", "w") as log:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def wait_all(runs: dict, t0: float) -> dict:
    """Each campaign's wall time, from the common start to its own end."""
    ended = {}
    while len(ended) < len(runs):
        for key, proc in runs.items():
            if key not in ended and proc.poll() is not None:
                ended[key] = time.monotonic() - t0
        time.sleep(1.0)
    return ended


def subject(finding: dict) -> str:
    """What a finding blames: the pass (its first one for a pass-order finding) or the op."""
    extra = finding.get("extra") or {}
    if extra.get("blamed_pass"):
        return extra["blamed_pass"]
    if extra.get("pass_names"):
        return extra["pass_names"][-1]
    return f"{finding['kind']} at {finding['stage']}"


def result(out: Path, wall_s: float, fuzz_s: float) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    findings = [json.loads(p.read_text()) for p in sorted((out / "findings").glob("*/finding.json"))]
    half = 0
    for line in (out / "stats.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["t"] <= fuzz_s / 2:
            half = row["findings"]
    return {"cases": summary["cases"], "findings": len(findings), "subjects": len({subject(f) for f in findings}),
            "root_keys": root_causes([keys for _, _, keys in saved_keys(out)]),
            "unconfirmed": len(summary["unconfirmed"]), "wall_s": wall_s, "half_time_findings": half,
            "per_hour": len(findings) / (wall_s / 3600), "signatures": sorted(f["signature"] for f in findings)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--time", type=float, default=600.0, help="fuzzing seconds per campaign (default 600)")
    p.add_argument("--seeds", default="1", help="seeds, comma-separated (default 1)")
    p.add_argument("--settings", nargs="+", default=["ops=10", "ops=20", "ops=40"])
    p.add_argument("--ir", default="relax", choices=["relax", "relay"], help="the IR fuzzed (default relax)")
    p.add_argument("--keep", help="keep the campaigns' folders here")
    args = p.parse_args(argv)
    settings = [(text, parse_setting(text)) for text in args.settings]
    seeds = [int(s) for s in args.seeds.split(",")]
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-settings-"))
    t0 = time.monotonic()
    runs = {(text, seed): start(setting, seed, base / f"{text}-seed{seed}", args.time, args.ir)
            for text, setting in settings for seed in seeds}
    ended = wait_all(runs, t0)
    rows = []
    for (text, seed), proc in runs.items():
        if proc.returncode != 0:
            log = (base / f"{text}-seed{seed}.log").read_text().strip()
            raise SystemExit(f"{text} seed {seed} failed ({proc.returncode}): {log[-500:]}")
        rows.append({"setting": text, "seed": seed,
                     **result(base / f"{text}-seed{seed}", ended[text, seed], args.time)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"--ir {args.ir} --time {args.time:g} --jobs 1 each, {len(runs)} campaigns side by side on {len(seeds)} seed(s)\n")
    print("| setting | seed | cases | findings | subjects | root keys | unconfirmed | at half time | findings/hour |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['seed']} | {r['cases']} | {r['findings']} | {r['subjects']} | {r['root_keys']} | "
              f"{r['unconfirmed']} | {r['half_time_findings']} | {r['per_hour']:.0f} |")
    print(f"\nfolders: {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
