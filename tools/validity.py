"""Validity check at scale: N strict graphs must all pass well_formed and build.

    python tools/validity.py [--graphs 500] [--ops 20] [--seed 0]

Runs in-process (a TVM crash ends the run: that is itself a finding to look at).
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tvm import relax  # noqa: E402

from hirfuzz.dialects.relax.compile import build_module
from hirfuzz.protocol import make_config  # noqa: E402
from hirfuzz.core.coverage import Coverage  # noqa: E402
from hirfuzz.core.generate import generate_graph  # noqa: E402
from hirfuzz.core.calls import call_records  # noqa: E402
from hirfuzz.dialects.relax.lower import lower_graph  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=500)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    specs = load_specs()
    rng, cov = np.random.default_rng(args.seed), Coverage()
    stages = Counter()
    failures = []
    t0 = time.time()
    for i in range(args.graphs):
        g = generate_graph(specs, rng, args.ops, cov)
        stage = "lower"
        try:
            mod = lower_graph(g, call_records(g, specs))
            stage = "well_formed"
            relax.analysis.well_formed(mod)
            stage = "build"
            build_module(mod, make_config())
            stage = "ok"
        except Exception as exc:  # report, do not stop: the rate is the result
            failures.append((i, stage, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
            if len(failures) <= 3:
                traceback.print_exc(limit=2)
        stages[stage] += 1
        if (i + 1) % 50 == 0:
            print(f"{i + 1}/{args.graphs} graphs, {stages['ok']} ok, {time.time() - t0:.0f}s", flush=True)
    well_formed = stages["ok"] + stages["build"]
    print(f"graphs: {args.graphs} of {args.ops} ops; well-formed: {well_formed} "
          f"({100 * well_formed / args.graphs:.1f}%); built: {stages['ok']} ({100 * stages['ok'] / args.graphs:.1f}%)")
    for i, stage, msg in failures:
        print(f"  graph {i}: failed at {stage}: {msg}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
