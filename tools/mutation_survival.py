"""Why mutants find (or do not find) bugs: per Relax mutator, how often it applies, whether
its rewrite survives the passes that run before the interesting ones, which passes undo
it, and which IR shapes it gives the passes that generation never gives (issue 33 item 1).

    python tools/mutation_survival.py [--cases 30] [--ops 20] [--seed 1]

The cases are a campaign's own (campaign.cases.CaseMaker under the default settings but
--ops: the same graphs, lowering plans and drawn pass sequences), lowered in this process.
Each mutator that applies to a case's module is applied once, then the original and the
mutant go through the same stages:

- `canon`: Normalize then CanonicalizeBindings, the normalisation most sequences start with;
- `lifted`: what the plain build does first (mutators.prepare_for_build: LambdaLift where
  closures remain);
- `seq`: the case's drawn pass sequence (the pass-order oracle's), pass by pass.

After each stage the rewrite "survives" when the mutant is not structurally equal to the
original after the same stage, and its "structure survives" when the function structure
differs (the count of global functions, closures, calls of globals, calls of closures or
function values, Ifs): a function rewrite whose structure is gone before the sequence's
function-level passes run gives them nothing new. `undone by` counts the sequence's pass
after which the structure first stopped differing, and `mutant-only errors` the sequences
that raised (or left an ill-formed module) on the mutant but not on the original: direct
evidence of a mutant-only finding.

The shapes: each module is described by tokens (what each binding's value is, in which
kind of function and block; the op feeding each op; function-level patterns such as a
global that only forwards a call, a nullary global returning a function, a closure without
free variables). `new shapes` counts the distinct tokens of a mutator's mutants that no
original of the sample has, with examples.

Last, the configurations the mutation oracle gives a case (--mutations 1): which passes
mutants are run through today.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CANON = [{"name": "Normalize", "args": {}}, {"name": "CanonicalizeBindings", "args": {}}]


def structure(mod) -> tuple:
    """The function structure a function rewrite changes: (global Relax functions, closures,
    calls of globals, calls of closures or function values, Ifs)."""
    from tvm import relax
    counts = Counter()

    def visit(e):
        if isinstance(e, relax.Function):
            counts["closures"] += 1
        elif isinstance(e, relax.If):
            counts["ifs"] += 1
        elif isinstance(e, relax.Call):
            if isinstance(e.op, relax.GlobalVar):
                counts["global_calls"] += 1
            elif isinstance(e.op, relax.Var):
                counts["value_calls"] += 1
    n_globals = 0
    for _, f in mod.functions_items():
        if isinstance(f, relax.Function):
            n_globals += 1
            relax.analysis.post_order_visit(f.body, visit)
    return (n_globals, counts["closures"], counts["global_calls"], counts["value_calls"], counts["ifs"])


def _value_kind(value, defs) -> str:
    import tvm
    from tvm import relax
    if isinstance(value, relax.Call):
        op = value.op
        if isinstance(op, tvm.ir.Op):
            return "op"
        if isinstance(op, relax.GlobalVar):
            return "call-global"
        if isinstance(op, relax.Var):
            made = defs.get(op)
            if isinstance(made, relax.Function):
                return "call-closure"
            if isinstance(made, relax.Call):
                return "call-call-result"
            if isinstance(made, relax.GlobalVar):
                return "call-global-as-value"
            return "call-var"
        return "call-other"
    return type(value).__name__


def shape_tokens(mod) -> set[str]:
    """Tokens describing the module's IR shapes (see the module's docstring)."""
    import tvm
    from tvm import relax
    tokens: set[str] = set()

    def walk_function(f, where: str):
        if not isinstance(f.body, relax.SeqExpr):
            return
        if where == "closure":
            tokens.add("closure:" + ("captures" if relax.analysis.free_vars(f) else "no-free-vars"))
        else:
            if not f.params and isinstance(f.ret_ty, relax.FuncType):
                tokens.add("global:nullary-returning-function")
            only = [b for blk in f.body.blocks for b in blk.bindings]
            if len(only) == 1 and _value_kind(only[0].value, {}) == "call-global":
                tokens.add("global:forwards-a-call")
        defs = {}
        for blk in f.body.blocks:
            kind = "df" if isinstance(blk, relax.DataflowBlock) else "plain"
            for b in blk.bindings:
                value = b.value
                vk = _value_kind(value, defs)
                tokens.add(f"{where}/{kind}/{vk}" if isinstance(b, relax.VarBinding) else f"{where}/{kind}/match_cast")
                if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
                    for a in value.args:
                        feeder = defs.get(a)
                        if isinstance(feeder, relax.Call) and isinstance(feeder.op, tvm.ir.Op):
                            tokens.add(f"edge:{feeder.op.name}>{value.op.name}")
                        elif isinstance(feeder, relax.TupleGetItem):
                            tokens.add(f"edge:tuple-item>{value.op.name}")
                if vk.startswith("call-") and any(isinstance(getattr(a, "ty", None), relax.TupleType)
                                                  for a in value.args):
                    tokens.add(f"{where}/{vk}/tuple-argument")
                if isinstance(value, relax.If):
                    cond = defs.get(value.cond)
                    tokens.add("if-cond:" + (cond.op.name if isinstance(cond, relax.Call)
                                             and isinstance(cond.op, tvm.ir.Op) else type(value.cond).__name__))
                if isinstance(value, relax.Function):
                    walk_function(value, "closure")
                defs[b.var] = value

    for _, f in mod.functions_items():
        if isinstance(f, relax.Function):
            walk_function(f, "global")
    return tokens


def _run_stage(dialect, mod, passes: list[dict]):
    """The module after `passes` (at opt level 3, so that none is skipped), or the error."""
    try:
        return dialect.apply_passes(mod, {"passes": passes, "opt_level": 3}), None
    except Exception as exc:  # noqa: BLE001 - an error is an outcome to count
        return None, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160] if str(exc).strip() else ''}"


class Row:
    def __init__(self):
        self.applies = 0
        self.errors = 0
        self.survives = Counter()       # stage -> mutants still differing from the original
        self.structure = Counter()      # stage -> mutants whose function structure still differs
        self.structural_rewrite = 0     # mutants whose structure differs at all (before any pass)
        self.undone_by = Counter()      # the sequence's pass after which the mutant equals the original again
        self.structure_undone_by = Counter()  # ... after which the function structure stopped differing
        self.mutant_only_errors = []    # (case, pass, error) the mutant raised and the original did not
        self.tokens: set[str] = set()

    def add(self, other: "Row"):
        self.applies += other.applies
        self.errors += other.errors
        self.survives.update(other.survives)
        self.structure.update(other.structure)
        self.structural_rewrite += other.structural_rewrite
        self.undone_by.update(other.undone_by)
        self.structure_undone_by.update(other.structure_undone_by)
        self.mutant_only_errors += other.mutant_only_errors
        self.tokens |= other.tokens


_MAKER = {}


def survey_case(seed: int, ops: int, index: int, names: list[str] | None, progress: str) -> dict:
    """Case `index` and the mutators `names` (None: all) in this process: the original's
    tokens and a Row per mutator that applied. What it is doing is written to `progress`
    first, so that a process TVM kills still says where."""
    import numpy as np
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.settings import Settings
    from hirfuzz.core.passes import load_catalog
    from hirfuzz.core.spec import load_specs
    from hirfuzz.dialects import dialect_info, load_dialect
    from hirfuzz.dialects.relax.mutators import MUTATORS, prepare_for_build
    from hirfuzz.worker import _structural, _traits

    if (seed, ops) not in _MAKER:
        info = dialect_info("relax")
        _MAKER[seed, ops] = CaseMaker(Settings(seed=seed, ops=ops), load_specs(), info,
                                      load_catalog([], builtin=info.catalog))
    dialect = load_dialect("relax")
    case = _MAKER[seed, ops].make_case(index)
    try:
        mod = dialect.lower(case.request)
        dialect.check_well_formed(mod)
    except Exception:  # noqa: BLE001 - a case TVM refuses to lower has no mutants
        return {"lowered": False, "tokens": set(), "rows": {}}
    seq = next((c["passes"] for c in case.configs if c.get("oracle") == "pass-order"), [])
    traits = _traits(case.request)
    note = _Progress(progress)
    orig_stages = _stages(dialect, mod, seq, prepare_for_build, note.at("original"))
    rows = {}
    for name in sorted(MUTATORS) if names is None else names:
        m = MUTATORS[name]
        if not m.applies(mod, traits):
            continue
        row = rows[name] = Row()
        row.applies += 1
        try:
            mutant = m.apply(mod, np.random.default_rng([seed, index, len(name)]), traits)
            dialect.check_well_formed(mutant)
        except Exception:  # noqa: BLE001 - check_mutations.py says why; here it is counted
            row.errors += 1
            continue
        row.tokens |= shape_tokens(mutant)
        if structure(mutant) != structure(mod):
            row.structural_rewrite += 1
        mut_stages = _stages(dialect, mutant, seq, prepare_for_build, note.at(name))
        _compare(row, index, orig_stages, mut_stages, seq, _structural()[0])
    return {"lowered": True, "tokens": shape_tokens(mod), "rows": rows}


class _Progress:
    def __init__(self, path: str):
        self.path = path

    def at(self, who: str):
        def note(stage: str):
            with open(self.path, "w") as f:
                f.write(f"{who}\t{stage}")
        return note


def survey(cases: int, ops: int, seed: int) -> tuple[dict, set, int, float]:
    """Every case in a child process: TVM segfaults on some mutants (that is a finding: a
    mutant-only crash), and the survey goes on. A case whose process died is surveyed
    again one mutator a process, to name the mutator and the pass."""
    import tempfile
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    import multiprocessing as mp

    rows = defaultdict(Row)
    originals: set[str] = set()
    lowered = 0
    t0 = time.time()
    progress = tempfile.mktemp(prefix="mutation-survival-")
    pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))

    def run(index, names):
        nonlocal pool
        try:
            return pool.submit(survey_case, seed, ops, index, names, progress).result()
        except BrokenProcessPool:
            pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
            return None

    def merge(got):
        nonlocal lowered, originals
        lowered += got["lowered"]
        originals |= got["tokens"]
        for name, r in got["rows"].items():
            rows[name].add(r)

    for index in range(cases):
        got = run(index, None)
        if got is not None:
            merge(got)
            continue
        from hirfuzz.dialects.relax.mutators import MUTATORS
        alone = run(index, [])
        if alone is None:
            print(f"case {index}: the original alone kills the process; left out", file=sys.stderr)
            continue
        merge(alone)
        for name in sorted(MUTATORS):
            one = run(index, [name])
            if one is not None:
                for got_name, r in one["rows"].items():
                    rows[got_name].add(r)
                continue
            where = Path(progress).read_text() if Path(progress).exists() else "?"
            row = rows[name]
            row.applies += 1
            row.mutant_only_errors.append((index, where.split("\t")[-1], "the process died (segfault)"))
    pool.shutdown()
    return rows, originals, lowered, time.time() - t0


def _stages(dialect, mod, seq, prepare, note) -> dict:
    """The module after each stage (None where it raised), and the sequence's steps."""
    out = {"structure": structure(mod)}
    note("canon")
    out["canon"], _ = _run_stage(dialect, mod, CANON)
    note("lifted")
    try:
        out["lifted"] = prepare(mod)
    except Exception:  # noqa: BLE001
        out["lifted"] = None
    steps, errors, cur = [], [], mod
    for step in seq:
        note(step["name"])
        cur, err = _run_stage(dialect, cur, [step]) if cur is not None else (None, None)
        steps.append(cur)
        errors.append(err)
    out["steps"], out["errors"] = steps, errors
    return out


def _compare(row: Row, index: int, orig: dict, mut: dict, seq: list, equal):
    def differs(a, b):
        return a is not None and b is not None and not equal(a, b)

    for stage in ("canon", "lifted"):
        if differs(orig[stage], mut[stage]):
            row.survives[stage] += 1
        if orig[stage] is not None and mut[stage] is not None and structure(orig[stage]) != structure(mut[stage]):
            row.structure[stage] += 1
    equal_yet = False
    structure_gone = orig["structure"] == mut["structure"]
    for step, a, b, ea, eb in zip(seq, orig["steps"], mut["steps"], orig["errors"], mut["errors"]):
        if eb and not ea and a is not None:
            row.mutant_only_errors.append((index, step["name"], eb))
        if a is None or b is None:
            break
        if not equal_yet and equal(a, b):
            row.undone_by[step["name"]] += 1
            equal_yet = True
        if not structure_gone and structure(a) == structure(b):
            row.structure_undone_by[step["name"]] += 1
            structure_gone = True
    if seq and orig["steps"] and mut["steps"] and orig["steps"][-1] is not None and mut["steps"][-1] is not None:
        if differs(orig["steps"][-1], mut["steps"][-1]):
            row.survives["seq"] += 1
        if structure(orig["steps"][-1]) != structure(mut["steps"][-1]):
            row.structure["seq"] += 1


def mutant_configs() -> list[dict]:
    """The configurations the mutation oracle adds to a case with --mutations 1."""
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.settings import Settings
    from hirfuzz.core.passes import load_catalog
    from hirfuzz.core.spec import load_specs
    from hirfuzz.dialects import dialect_info
    info = dialect_info("relax")
    maker = CaseMaker(Settings(seed=1, ops=8, mutations=1), load_specs(), info, load_catalog([], builtin=info.catalog))
    out = []
    for index in range(5):
        out += [c for c in maker.make_case(index).configs if c.get("module") == 1]
    return out


def print_table(rows: dict, originals: set, lowered: int, seconds: float, cases: int, ops: int, seed: int):
    print(f"{lowered} of {cases} cases lowered (seed {seed}, --ops {ops}); {seconds:.0f} s\n")
    print("| mutator | applies | structure changed | survives canon | structure after canon | survives lifted "
          "| structure after lifted | survives seq | structure after seq | equal again after | structure undone by "
          "| mutant-only errors | new shapes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in sorted(rows):
        r = rows[name]
        new = sorted(r.tokens - originals)
        undone = ", ".join(f"{p} {n}" for p, n in r.undone_by.most_common(3))
        structure_undone = ", ".join(f"{p} {n}" for p, n in r.structure_undone_by.most_common(3))
        print(f"| {name} | {r.applies}{f' ({r.errors} failed)' if r.errors else ''} | {r.structural_rewrite} "
              f"| {r.survives['canon']} | {r.structure['canon']} | {r.survives['lifted']} | {r.structure['lifted']} "
              f"| {r.survives['seq']} | {r.structure['seq']} | {undone} | {structure_undone} | {len(r.mutant_only_errors)} | {len(new)} |")
    print("\nnew shapes (tokens no original of the sample has), up to 6 per mutator:")
    for name in sorted(rows):
        new = sorted(rows[name].tokens - originals)
        if new:
            print(f"  {name}: {', '.join(new[:6])}{' ...' if len(new) > 6 else ''}")
    errors = [(name, e) for name in sorted(rows) for e in rows[name].mutant_only_errors]
    if errors:
        print("\nsequence passes that raised on the mutant and not on the original:")
        for name, (index, pass_name, err) in errors[:20]:
            print(f"  {name} case {index} {pass_name}: {err}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=30)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.cases < 1 or args.ops < 1:
        print("mutation_survival: --cases and --ops must be at least 1", file=sys.stderr)
        return 2
    rows, originals, lowered, seconds = survey(args.cases, args.ops, args.seed)
    print_table(rows, originals, lowered, seconds, args.cases, args.ops, args.seed)
    print("\nwhat the mutation oracle runs a mutant through (--mutations 1, first cases):")
    for config in mutant_configs()[:4]:
        print(f"  {config.get('oracle')}: passes {[s['name'] for s in config['passes']] or 'none (plain build)'}, "
              f"opt_level {config.get('opt_level')}")
    return 0


if __name__ == "__main__":
    code = main()
    # TVM 0.27 can segfault while the interpreter tears its objects down after many
    # pass runs in one process: what was printed is the result, so leave at once
    sys.stdout.flush()
    os._exit(code)
