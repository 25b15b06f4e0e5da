"""Per-op conformance report: does TVM agree with each op spec?

    python tools/conformance_report.py [--ops a,b] [--samples N] [--seed S] [--probe-all] [--json] [--target cuda]

For every op (or those of ``--ops``), ``N`` single-op cases per dtype are generated from the
spec, lowered, type-checked against the spec's output rule, built for llvm (or ``--target cuda``), run and compared
with the spec's NumPy reference (``hirfuzz.conformance.report_rows``). The table shows the
dtypes tried, those TVM accepted (built and ran), those whose results agreed with the
reference, and the first problem of each failing op. ``--probe-all`` also tries the dtypes
a spec leaves out, once each, to show what TVM accepts beyond the spec (``missed``).

Adding an op is: write its YAML in ``opspecs/`` (at the top of the repository), then run this report with ``--ops <name>``.
Exit status 1 when any op has a problem.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.conformance import NoDevice  # noqa: E402
from hirfuzz.core.targets import TARGET_KINDS  # noqa: E402
from hirfuzz.dialects.relax.conformance import op_report, target_config  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402

_SHORT = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "float16": "f16", "float32": "f32", "float64": "f64"}


def _dts(dtypes) -> str:
    return ",".join(_SHORT.get(d, d) for d in dtypes) or "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--samples", type=int, default=4, help="cases per dtype (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--probe-all", action="store_true", help="also try dtypes the spec leaves out")
    ap.add_argument("--spec-dir", default=None, help="op spec folder (default: opspecs/)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--target", default="llvm", help="llvm (default) or cuda")
    args = ap.parse_args(argv)
    if args.target not in TARGET_KINDS:
        print(f"--target {args.target}: unknown target; use {' or '.join(TARGET_KINDS)}", file=sys.stderr)
        return 2
    try:
        config = target_config(args.target)
    except NoDevice as exc:
        print(f"conformance_report: {exc}", file=sys.stderr)
        return 2

    specs = load_specs(args.spec_dir)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()] or specs.names()
    unknown = [o for o in ops if o not in specs.ops]
    if unknown:
        print(f"unknown op(s): {', '.join(unknown)}", file=sys.stderr)
        return 2

    rows, t0 = [], time.time()
    for name in ops:
        rep = op_report(specs, name, args.samples, args.seed, args.probe_all, config)
        row = rep.row()
        row["first_problem"] = rep.problems[0] if rep.problems else ""
        rows.append(row)
        if not args.json:
            print(f"{row['op']:<26} {'ok' if row['ok'] else 'FAIL':<4} "
                  f"tried={_dts(row['tried']):<40} accepted={_dts(row['accepted']):<40} "
                  f"agreed={_dts(row['agreed'])}"
                  + (f" missed={_dts(row['missed'])}" if row["missed"] else "")
                  + f" compared={row['compared']}/{row['samples']}", flush=True)
            if row["first_problem"]:
                print(f"    {row['first_problem']}", flush=True)
    bad = [r["op"] for r in rows if not r["ok"]]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{len(rows)} ops, {len(rows) - len(bad)} conform, {len(bad)} with problems"
              + (f" ({', '.join(bad)})" if bad else "") + f"; {time.time() - t0:.0f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
