"""How many of a campaign's cases TVM builds for CUDA, on a machine without a GPU.

    python -m tools.cuda_build_check [--cases 60] [--ops 20] [--seed 0] [--arch sm_90]

TVM 0.27 lowers a module for a cuda target down to CUDA source without a GPU (the source
is compiled to a cubin only where the CUDA compiler is), so every failure of its
pipelines, dlight's schedules and CUDA's codegen shows here. This makes the cases of a
`--target llvm,cuda` campaign with the given seed (what generation leaves out for cuda
included) and builds each in this process for llvm and for cuda; it reports how many
built on each and the distinct cuda-only errors, with how often each came. Nothing is
run: run-time failures and nvrtc's need a GPU (`python -m pytest -m gpu` there).
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.coordinator import Campaign, Settings  # noqa: E402
from hirfuzz.core.finding import error_line  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.core.targets import resolve_target  # noqa: E402


def build_error(dialect, request: dict, config: dict) -> str:
    """"" where the case's module builds under `config`; else what TVM said, in one line."""
    try:
        dialect.build(dialect.lower(request), config)
        return ""
    except Exception as exc:  # noqa: BLE001 - what TVM raised is what this counts
        return error_line(type(exc).__name__, str(exc))[:160]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=60)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="sm_90")
    args = p.parse_args(argv)
    from hirfuzz.dialects.relax.dialect import RelaxDialect
    dialect = RelaxDialect()
    with tempfile.TemporaryDirectory() as out:
        campaign = Campaign(Settings(out=out, iterations=0, ops=args.ops, seed=args.seed, targets=["llvm", "cuda"]),
                            load_specs(), progress=False)
        hello = {"devices": {"cuda": True, "cuda_arch": args.arch}}
        campaign.maker.targets = [resolve_target(t, hello) for t in campaign.s.targets]
        built = collections.Counter()
        cuda_only = collections.Counter()
        t0 = time.monotonic()
        for index in range(args.cases):
            case = campaign.maker.make_case(index)
            llvm_error = build_error(dialect, case.request, case.configs[0])
            cuda_error = build_error(dialect, case.request, case.configs[-1])
            built["llvm"] += not llvm_error
            built["cuda"] += not cuda_error
            if cuda_error and not llvm_error:
                cuda_only[cuda_error] += 1
        print(f"{args.cases} cases of {args.ops} ops, seed {args.seed}, {time.monotonic() - t0:.0f} s: "
              f"llvm built {built['llvm']}, cuda built {built['cuda']} "
              f"({built['cuda'] / max(1, built['llvm']):.0%} of llvm's)")
        print(f"generation left out for cuda: {getattr(campaign.maker.gen_stats, 'left_out', {})}")
        for error, count in cuda_only.most_common():
            print(f"{count:4d}  {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
