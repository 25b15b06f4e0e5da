"""Benchmark: what one libinfo for the worker (dialects/relay/executors.keep_one_libinfo)
saves of a Relay build, side by side on the same modules in one process.

    python tools/bench_relay_build.py [--cases 16] [--seed 3] [--gradients 0.5] [--repeat 2]

TVM 0.19's `lower_call` asks `tvm.support.libinfo()` (a fresh dict of libtvm's flags)
once per static dimension of every call it lowers. This draws a short Relay campaign's
cases (no reduction, no reproducer checks), then, in the Relay environment, lowers each
case's modules as its worker does (its pass sequence, or FirstOrderGradient for a gradient
configuration) and builds every one both ways: with TVM's own libinfo and with the one
the worker keeps, alternating which goes first (the machine is shared and noisy). It
prints the build seconds of each way, gradient configurations apart, and their ratio.
TVM runs single-threaded, as in workers.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TVM_NUM_THREADS", "1")  # as the pool's workers run


def draw_cases(out: Path, args) -> list[dict]:
    """The requests and configurations of a short Relay campaign's cases."""
    sys.path.insert(0, str(ROOT / "tools"))
    from campaign_fingerprint import run_recording  # tools/, beside this script
    from hirfuzz.campaign.coordinator import Campaign, Settings
    from hirfuzz.campaign.environment import tvm_interpreter
    from hirfuzz.core.spec import load_specs
    python, env, _ = tvm_interpreter("relay")
    settings = Settings(out=str(out), jobs=1, seed=args.seed, iterations=args.cases, ops=10, dialect="relay",
                        tvm_python=python, tvm_env=env, gradients=args.gradients, check_cases=0,
                        reduce=False, verify=False, versions=[])
    with contextlib.redirect_stdout(sys.stderr):  # what the campaign says is not the benchmark's
        _, seen = run_recording(Campaign(settings, load_specs(dialect="relay"), progress=False))
    return [{"request": case.request, "configs": case.configs} for case in seen]


def modules_to_build(case: dict, dialect) -> list[tuple[object, dict]]:
    """(module, configuration) of each build a case's worker makes, past its passes."""
    from hirfuzz.worker import module_anew
    built = []
    for config in case["configs"]:
        if config.get("module", 0) == 1:  # a mutant: Relay's default campaign draws none
            continue
        try:
            module = module_anew(dialect, case["request"], config)
            dialect.check_well_formed(module)
            built.append((dialect.apply_passes(module, config), config))
        except Exception:  # noqa: BLE001 - no build follows a failed lowering or pass sequence
            continue
    return built


def time_builds(cases_file: str, repeat: int) -> dict:
    """In the Relay environment: build seconds with TVM's libinfo and with the kept one."""
    from tvm.relay.backend import te_compiler
    tvms_libinfo = te_compiler.libinfo
    from hirfuzz.dialects import load_dialect
    import hirfuzz.dialects.relay.executors  # noqa: F401  (keeps one libinfo on import)
    kept_libinfo = te_compiler.libinfo
    assert kept_libinfo is not tvms_libinfo
    dialect = load_dialect("relay")
    totals = {"tvm": {"plain": 0.0, "gradient": 0.0}, "kept": {"plain": 0.0, "gradient": 0.0}}
    builds = {"plain": 0, "gradient": 0}
    for index, case in enumerate(json.loads(Path(cases_file).read_text())):
        for module, config in modules_to_build(case, dialect):
            part = "gradient" if config.get("gradient") else "plain"
            order = ("tvm", "kept") if index % 2 else ("kept", "tvm")
            for _ in range(repeat):
                for way in order:
                    te_compiler.libinfo = tvms_libinfo if way == "tvm" else kept_libinfo
                    t0 = time.perf_counter()
                    try:
                        dialect.build(module, config)
                    except Exception:  # noqa: BLE001 - a failing build costs what it cost, both ways
                        pass
                    totals[way][part] += time.perf_counter() - t0
            builds[part] += 1
    return {"totals": totals, "builds": builds, "repeat": repeat}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/bench_relay_build.py")
    parser.add_argument("--cases", type=int, default=16)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--gradients", type=float, default=0.5, help="share of gradient cases (default 0.5)")
    parser.add_argument("--repeat", type=int, default=2, help="builds of each module each way (default 2)")
    parser.add_argument("--time-builds", help=argparse.SUPPRESS)  # the Relay side: a file of drawn cases
    args = parser.parse_args(argv)
    if args.time_builds:
        print(json.dumps(time_builds(args.time_builds, args.repeat)))
        return 0
    from hirfuzz.campaign.environment import tvm_interpreter
    python, env, _ = tvm_interpreter("relay")
    with tempfile.TemporaryDirectory() as tmp:
        cases_file = Path(tmp) / "cases.json"
        cases_file.write_text(json.dumps(draw_cases(Path(tmp) / "out", args)))
        proc = subprocess.run([python, __file__, "--time-builds", str(cases_file), "--repeat", str(args.repeat)],
                              capture_output=True, text=True, env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        print(proc.stderr[-4000:], file=sys.stderr)
        return 1
    result = json.loads(proc.stdout.splitlines()[-1])
    tvm_s, kept_s = result["totals"]["tvm"], result["totals"]["kept"]
    print(f"{args.cases} Relay cases (seed {args.seed}, gradient share {args.gradients}), each build "
          f"{result['repeat']}x each way, alternating which goes first")
    for part in ("plain", "gradient"):
        if result["builds"][part]:
            print(f"{part}: {result['builds'][part]} builds, TVM's libinfo {tvm_s[part]:.2f}s, kept "
                  f"{kept_s[part]:.2f}s, ratio {tvm_s[part] / kept_s[part]:.2f}")
    if not sum(result["builds"].values()):
        print("no case reached a build: draw more (--cases)")
        return 1
    print(f"all builds: ratio {sum(tvm_s.values()) / sum(kept_s.values()):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
