"""How many of a campaign's cases TVM builds for CUDA, on a machine without a GPU.

    python -m tools.cuda_build_check [--cases 60] [--ops 20] [--seed 0] [--arch sm_90]
    python -m tools.cuda_build_check --single-ops [--only OP,OP]

TVM 0.27 lowers a module for a cuda target down to CUDA source without a GPU (the source
is compiled to a cubin only where the CUDA compiler is), so every failure of its
pipelines, dlight's schedules and CUDA's codegen shows here. This makes the cases of a
`--target llvm,cuda` campaign with the given seed (what generation leaves out for cuda
included) and builds each in this process for llvm and for cuda; it reports how many
built on each and the distinct cuda-only errors, with how often each came. Nothing is
run: run-time failures and nvrtc's need a GPU (`python -m pytest -m gpu` there).

With --single-ops it builds single-operator programs of every op and dtype instead,
generated as for a `--target llvm,cuda` campaign (what the op specs' `targets: cuda:`
entries exclude left out), and lists each whose cuda build fails: what no entry foresaw.
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
from hirfuzz.core.finding import error_line, normalize_message  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402


# what an H100's worker reports besides its architecture (dialects.base.installation_of)
H100_LIMITS = {"max_shared_memory_per_block": 49152, "max_num_threads": 1024, "thread_warp_size": 32}


def build_error(dialect, request: dict, config: dict) -> str:
    """"" where the case's module builds under `config`; else what TVM said, in one line."""
    try:
        dialect.build(dialect.lower(request), config)
        return ""
    except Exception as exc:  # noqa: BLE001 - what TVM raised is what this counts
        return error_line(type(exc).__name__, str(exc))[:160]


def single_ops(dialect, config: dict, only: list[str] | None, samples: int) -> int:
    """Single-op programs of every op and dtype, generated for llvm and cuda (what the op
    specs' cuda entries exclude left out), built for cuda: the failures no entry foresaw."""
    from hirfuzz.core.generate import Excluded, Rejected, single_op_graph
    from hirfuzz.core.calls import call_records
    import numpy as np
    specs = load_specs()
    failed = avoided = built = 0
    for op in only or specs.names():
        for dtype in specs.ops[op].dtypes:
            for i in range(samples):
                try:
                    graph = single_op_graph(specs, op, dtype, np.random.default_rng([i, len(op), len(dtype)]),
                                            targets=("llvm", "cuda"))
                except Excluded:
                    avoided += 1
                    break
                except Rejected:
                    continue
                error = build_error(dialect, {"graph": graph.to_json(), "calls": call_records(graph, specs)}, config)
                built += not error
                failed += bool(error)
                if error:
                    print(f"{op} [{dtype}] sample {i}: {error}", flush=True)
    print(f"{built} built for cuda, {failed} failed where no op spec entry foresaw it; "
          f"{avoided} op-dtypes left out by an entry")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=60)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--single-ops", action="store_true", help="one single-op program per op and dtype")
    p.add_argument("--only", default=None, help="with --single-ops: these ops (comma-separated)")
    p.add_argument("--samples", type=int, default=1, help="with --single-ops: programs per op and dtype")
    args = p.parse_args(argv)
    from hirfuzz.dialects.relax.dialect import RelaxDialect
    from hirfuzz.protocol import make_config
    dialect = RelaxDialect()
    gpu = {**H100_LIMITS, "kind": "cuda", "arch": args.arch}
    if args.single_ops:
        return single_ops(dialect, make_config("vm", gpu), args.only.split(",") if args.only else None, args.samples)
    with tempfile.TemporaryDirectory() as out:
        campaign = Campaign(Settings(out=out, iterations=0, ops=args.ops, seed=args.seed, targets=["llvm", "cuda"]),
                            load_specs(), progress=False)
        hello = {"devices": {"cuda": True, "cuda_target": gpu}}
        campaign.maker.name_targets(hello)
        built = collections.Counter()
        cuda_only = collections.defaultdict(list)  # error -> the op:dtype sets of its cases
        t0 = time.monotonic()
        for index in range(args.cases):
            case = campaign.maker.make_case(index)
            llvm_error = build_error(dialect, case.request, case.configs[0])
            cuda_error = build_error(dialect, case.request, case.configs[-1])
            built["llvm"] += not llvm_error
            built["cuda"] += not cuda_error
            if cuda_error and not llvm_error:
                cuda_only[normalize_message(cuda_error)].append(
                    sorted({f"{n.op}:{n.dtype}" for n in case.graph.operators}))
        print(f"{args.cases} cases of {args.ops} ops, seed {args.seed}, {time.monotonic() - t0:.0f} s: "
              f"llvm built {built['llvm']}, cuda built {built['cuda']} "
              f"({built['cuda'] / max(1, built['llvm']):.0%} of llvm's)")
        stats = campaign.maker.gen_stats
        print(f"generation avoided: {stats.avoided}; plan features stripped: {stats.plan_features_stripped}")
        for error, cases in sorted(cuda_only.items(), key=lambda item: -len(item[1])):
            print(f"{len(cases):4d}  {error}")
            for ops in cases[:3]:
                print(f"        in a case of {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
