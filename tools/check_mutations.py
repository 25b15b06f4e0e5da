"""The large check of lowering features and mutators (issue 3).

For each of N random strict graphs (seeds 0..N-1): lower it plainly, build and run it,
and note which results agree with the NumPy reference. Then, for every lowering feature
(a plan drawn with only that feature's knobs) and every mutator (applied to the graph
lowered under the default knobs with p_cut 0.35, so that function rewrites have functions
to rewrite),
check that the module is well-formed, builds (after mutate.prepare_for_build), runs, and
that every result on which the original agrees with the reference still agrees (the
common prefix: expose_output appends results). `reassociate` and `const_merge` need an
(x op a) op b pattern that random graphs seldom contain: where they do not apply, a
`const_split` is applied first (reported as "enabled").

A hang in TVM (or in a mutant) stalls its worker; run with --out and, if a run stalls,
kill it and summarise what was written (--summarize FILE ...), rerunning the missing
seeds with --start/--graphs.

    PYTHONPATH=. python tools/check_mutations.py --graphs 300 --jobs 2 [--ops stable|all]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STABLE_OPS = ["add", "subtract", "multiply", "exp", "abs", "negative", "sum", "permute_dims", "reshape",
              "concat", "split", "matmul", "nn.relu", "where", "astype", "equal"]


def feature_knobs():
    from hirfuzz.core.plan import Knobs
    return {
        "global_functions": Knobs.only(p_cut=0.3, p_local=0.0, p_nest=0.6),
        "closures": Knobs.only(p_cut=0.3, p_local=1.0, p_capture=0.7, p_nest=0.6),
        "call_chains": Knobs.only(p_cut=0.5, p_local=0.5, p_capture=0.5, p_nest=1.0, max_depth=4),
        "function_values": Knobs.only(p_cut=0.3, p_local=0.5, p_as_value=1.0, p_nest=0.5),
        "plain_blocks": Knobs.only(p_plain=0.5),
        "if": Knobs.only(p_if=0.4),
        "match_cast": Knobs.only(p_match_cast=0.4),
        "shape_of": Knobs.only(p_shape_of=0.4),
        "tuple": Knobs.only(p_tuple=0.4),
        "dynamic_params": Knobs.only(p_dynamic_param=0.7),
        "all_features": Knobs(),
    }


def check_graph(seed: int, n_ops: int, ops_kind: str) -> dict:
    import numpy as np
    import tvm
    from tvm import relax

    from hirfuzz.core.coverage import Coverage
    from hirfuzz.core.plan import Knobs, plan_lowering
    from hirfuzz.core.generate import generate_graph
    from hirfuzz.core.inputs import choose_inputs
    from hirfuzz.core.calls import call_records, op_traits
    from hirfuzz.dialects.relax.lower import lower_graph
    from hirfuzz.dialects.relax.mutators import MUTATORS, prepare_for_build
    from hirfuzz.core.oracle import compare_tensor
    from hirfuzz.dialects.relax.executors import _flatten
    from hirfuzz.core.spec import load_specs

    specs = check_graph.specs = getattr(check_graph, "specs", None) or load_specs()
    rng = np.random.default_rng(seed)
    ops = STABLE_OPS if ops_kind == "stable" else specs.names()
    graph = generate_graph(specs, rng, n_ops, Coverage(), ops=[o for o in ops if o in specs.ops])
    ci = choose_inputs(graph, specs, rng)
    inputs = [ci.values[v.id] for v in graph.variables]
    results = graph.results()

    def run(mod):
        ex = relax.build(prepare_for_build(mod), "llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return _flatten(vm["main"](*[tvm.runtime.tensor(a) for a in inputs]))

    out = {"seed": seed, "variants": {}}
    try:
        base = run(lower_graph(graph, call_records(graph, specs)))
    except Exception as exc:  # noqa: BLE001
        out["base_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return out
    if not ci.runnable:
        out["base_error"] = "inputs may trap"
        return out
    agree = [i for i, (r, o) in enumerate(zip(results, base)) if compare_tensor(ci.facts[r], o) is None]
    out["base_agrees"] = len(agree) == len(results)

    def judge(name, make):
        rec = {"applies": False, "wf": False, "built": False, "equal": False}
        out["variants"][name] = rec
        try:
            mod = make()
        except _NotApplicable:
            return
        except Exception as exc:  # noqa: BLE001
            rec.update(applies=True, error=f"mutate: {type(exc).__name__}: {str(exc)[:300]}")
            return
        rec["applies"] = True
        try:
            relax.analysis.well_formed(mod)
            rec["wf"] = True
            outs = run(mod)
            rec["built"] = True
        except Exception as exc:  # noqa: BLE001
            rec["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else ''}"
            return
        bad = [i for i in agree if i >= len(outs) or compare_tensor(ci.facts[results[i]], outs[i]) is not None]
        rec["equal"] = not bad
        if bad:
            rec["error"] = f"results {bad} differ from the reference while the original agrees"

    for name, knobs in feature_knobs().items():
        plan = plan_lowering(graph, np.random.default_rng(seed * 7919 + 1), knobs)
        judge("lower:" + name, lambda plan=plan: lower_graph(graph, call_records(graph, specs), plan))

    default_mod = lower_graph(graph, call_records(graph, specs), plan_lowering(graph, np.random.default_rng(seed * 7919 + 2), Knobs(p_cut=0.35)))
    traits = op_traits(call_records(graph, specs).values())
    for name, m in sorted(MUTATORS.items()):
        def make(m=m, name=name):
            mod = default_mod
            mrng = np.random.default_rng(seed * 7919 + 3)
            if (not m.applies(mod, traits) and name in ("reassociate", "const_merge")
                    and MUTATORS["const_split"].applies(mod, traits)):
                mod = MUTATORS["const_split"].apply(mod, mrng, traits)
                out.setdefault("enabled", []).append(name)
            if not m.applies(mod, traits):
                raise _NotApplicable()
            return m.apply(mod, mrng, traits)
        judge("mutate:" + name, make)
    return out


class _NotApplicable(Exception):
    pass


def _safe(args):
    try:
        return check_graph(*args)
    except Exception:  # noqa: BLE001
        return {"seed": args[0], "crash": traceback.format_exc()[-800:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=300)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--n-ops", type=int, default=6)
    ap.add_argument("--ops", choices=["stable", "all"], default="stable")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="write every record as JSON lines here")
    ap.add_argument("--summarize", nargs="+", default=None, metavar="JSONL",
                    help="print the table for records written earlier with --out (no run)")
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.summarize:
        records = {}
        for path in args.summarize:  # later files override earlier records of the same seed
            for line in open(path):
                rec = json.loads(line)
                records[rec["seed"]] = rec
        return summarize(list(records.values()), f"{args.ops} ops", t0)
    work = [(s, args.n_ops, args.ops) for s in range(args.start, args.start + args.graphs)]
    records = []
    sink = open(args.out, "w") if args.out else None
    with mp.get_context("spawn").Pool(args.jobs, maxtasksperchild=50) as pool:
        for rec in pool.imap_unordered(_safe, work):
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
    return summarize(records, f"{args.ops} ops, {args.n_ops} ops each", t0)


def summarize(records, what: str, t0: float) -> int:
    table: dict[str, dict[str, int]] = {}
    problems = []
    for rec in records:
        for name, v in rec.get("variants", {}).items():
            row = table.setdefault(name, {"graphs": 0, "applies": 0, "wf": 0, "built": 0, "equal": 0})
            row["graphs"] += 1
            for k in ("applies", "wf", "built", "equal"):
                row[k] += int(v[k])
            if v.get("error"):
                problems.append((name, rec["seed"], v["error"]))
    usable = sum(1 for r in records if "variants" in r)
    print(f"{len(records)} graphs ({what}), {usable} with a runnable original, "
          f"{sum(1 for r in records if r.get('base_agrees'))} agreeing fully with the reference; "
          f"{time.time() - t0:.0f} s")
    print(f"{'feature / mutator':32} {'applies':>8} {'well-formed':>12} {'built+ran':>10} {'equal':>8}")
    for name in sorted(table):
        row = table[name]
        print(f"{name:32} {row['applies']:8d} {row['wf']:12d} {row['built']:10d} {row['equal']:8d}")
    enabled = sum(len(r.get("enabled", [])) for r in records)
    if enabled:
        print(f"({enabled} reassociate/const_merge applications were enabled by a const_split first)")
    crashes = [r for r in records if "crash" in r]
    for r in crashes:
        print("harness crash, seed", r["seed"], r["crash"])
    if problems:
        print(f"\n{len(problems)} problems:")
        for name, seed, err in problems[:60]:
            print(f"  {name} seed {seed}: {err}")
    return 1 if problems or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
