"""How often each Relax pass narrows a call, and whether its output justifies it (issue 27).

    python tools/narrowing_triggers.py [--seed 0] [--seconds 120] [--ops 8]

A campaign's cases (campaign.cases.CaseMaker, default settings, four check-only sequences
per case besides its own) have each of their pass sequences run one pass at a time, each
case in a child process (a pass that kills it costs that case, counted). After each pass, every operator call typed narrower than its operator infers from
its arguments now (dialects/relax/narrowing.narrowed_calls), and not so in the pass's input, is a
trigger of that pass. Calls whose type is not inferred from their arguments (call_tir,
call_dps_packed, the packed calls, any call with explicit output types) are left out.

Each trigger is classed:
  known        every dimension where the type and the inference differ is a constant that
               the inferred dimension evaluates to with the symbols that match_casts of
               the output bind to constants (a static value cast to a symbolic pattern;
               "n3 + 4" where n3 is cast from 3, for 7): the pass knew the shape, the
               claim is true (CanonicalizeBindings' SymbolicVarCanonicalizer does this,
               then drops the match_cast the substitution made trivial)
  unexplained  any other: a claim the output does not back, a candidate TVM bug
The class is module-wide, not scoped: a match_cast anywhere in the output counts, so
`known` is read against the program where it matters.

Measured 2026-11-26 (issue 27; seeds 1-3, 140 s each): 2,794 cases, 13,950 sequences, 396
triggers in 11 passes, every one `known`. Each of the 11 runs CanonicalizeBindings inside
itself (the pattern rewriters, ConvertToDataflow, ExpandTupleArguments, RemoveUnusedOutputs,
InlinePrivateFunctions) or is it. A per-pass check of "typed narrower than inferred" would
flag sound refinements, so hirfuzz makes no such check.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tvm  # noqa: E402
import tvm.tirx  # noqa: E402
from tvm import relax  # noqa: E402
from tvm.relax.analysis import type_base_check  # noqa: E402

from hirfuzz.campaign.cases import CaseMaker  # noqa: E402
from hirfuzz.campaign.settings import Settings  # noqa: E402
from hirfuzz.core.passes import load_catalog  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.dialects import dialect_info, load_dialect  # noqa: E402
from hirfuzz.dialects.relax.passes import _run, instantiate_pass  # noqa: E402

PASSED = 3  # relax.analysis.BaseCheckResult.PASS
# ops whose result type is given (their out sinfo), not inferred from their arguments
GIVEN_TYPE_OPS = {"relax.call_tir", "relax.call_tir_with_grad", "relax.call_tir_inplace",
                  "relax.call_dps_packed", "relax.call_packed", "relax.call_pure_packed",
                  "relax.call_inplace_packed", "relax.call_builtin_with_ctx"}
CHECK_SEQUENCES = 4  # the check-only sequences a Relax campaign draws per case by default


def narrowings(mod) -> dict[str, tuple]:
    """The calls of `mod` typed narrower than their operator infers: their description
    ("relax.sin: R.Tensor((6, 1)) where it infers R.Tensor((n6, 1))") -> (type, inferred)."""
    builder, found = relax.BlockBuilder(mod), {}

    def visit(expr):
        if not (isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op)):
            return
        if expr.op.name in GIVEN_TYPE_OPS or len(expr.ty_args):
            return
        try:
            inferred = builder.normalize(relax.Call(expr.op, expr.args, expr.attrs, expr.ty_args)).ty
        except Exception:  # noqa: BLE001 - an op that cannot infer from these args: not a narrowing
            return
        if int(type_base_check(expr.ty, inferred)) != PASSED:
            found[f"{expr.op.name}: {expr.ty} where it infers {inferred}"] = (expr.ty, inferred)
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return found


def match_cast_constants(mod) -> dict:
    """Symbolic variable -> the constant some match_cast of `mod` binds it to (a value of
    static shape cast to a symbolic pattern), all functions, nested ones included."""
    known = {}

    def visit(expr):
        if not isinstance(expr, relax.Function) or not hasattr(expr.body, "blocks"):
            return
        for block in expr.body.blocks:
            for binding in block.bindings:
                if isinstance(binding, relax.MatchCast):
                    for pattern, value in zip(shape_values(binding.ty) or [], shape_values(binding.value.ty) or []):
                        if isinstance(pattern, tvm.tirx.Var) and isinstance(value, tvm.tirx.IntImm):
                            known[pattern] = value.value
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return known


def shape_values(ty):
    """The dimensions of a tensor or shape type with a known shape, else None."""
    shape = getattr(ty, "shape", None)
    if shape is not None and getattr(shape, "values", None) is not None:
        return list(shape.values)
    values = getattr(ty, "values", None)
    return list(values) if values is not None else None


def structurally_equal(a, b) -> bool:
    try:
        tvm.ir.assert_structural_equal(a, b)
        return True
    except Exception:  # noqa: BLE001 - TVM raises its own error types on a mismatch
        return False


# integer arithmetic of shape expressions, as TIR defines it (floor division and modulo)
_ARITHMETIC = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
               "FloorDiv": lambda a, b: a // b if b else None, "FloorMod": lambda a, b: a % b if b else None,
               "Min": min, "Max": max}


def evaluate(expr, known: dict):
    """The integer value of shape expression `expr` with `known`'s symbols substituted;
    None where a symbol is unknown or an operation is not plain arithmetic."""
    if isinstance(expr, tvm.tirx.IntImm):
        return expr.value
    if isinstance(expr, tvm.tirx.Var):
        return known.get(expr)
    operation = _ARITHMETIC.get(type(expr).__name__)
    if operation is None:
        return None
    a, b = evaluate(expr.a, known), evaluate(expr.b, known)
    return None if a is None or b is None else operation(a, b)


def justified(ty, inferred, known: dict) -> bool:
    """Whether each dimension where `ty` and `inferred` differ is a constant of `ty` that
    `inferred`'s dimension there evaluates to with `known`'s symbols (field by field in a
    tuple: batch_norm's)."""
    if isinstance(ty, relax.TupleType) and isinstance(inferred, relax.TupleType):
        return len(ty.fields) == len(inferred.fields) and all(
            structurally_equal(t, i) or justified(t, i, known) for t, i in zip(ty.fields, inferred.fields))
    dims, inferred_dims = shape_values(ty), shape_values(inferred)
    if dims is None or inferred_dims is None or len(dims) != len(inferred_dims):
        return False
    return all(structurally_equal(d, i) or (isinstance(d, tvm.tirx.IntImm) and evaluate(i, known) == d.value)
               for d, i in zip(dims, inferred_dims))


class Tally:
    def __init__(self):
        self.runs, self.known, self.unexplained = Counter(), Counter(), Counter()
        self.examples = defaultdict(list)  # pass -> unexplained narrowings (a few)

    def after_pass(self, name: str, before, after):
        """Count pass `name` (input `before`, output `after`): a trigger where it adds a narrowing."""
        self.runs[name] += 1
        old = narrowings(before)
        new = {text: types for text, types in narrowings(after).items() if text not in old}
        if not new:
            return
        known = match_cast_constants(after)
        unexplained = [text for text, (ty, inferred) in new.items() if not justified(ty, inferred, known)]
        if unexplained:
            self.unexplained[name] += 1
            if len(self.examples[name]) < 3:
                self.examples[name].append(unexplained[0])
        else:
            self.known[name] += 1

    def add(self, other: "Tally"):
        self.runs += other.runs
        self.known += other.known
        self.unexplained += other.unexplained
        for name, texts in other.examples.items():
            self.examples[name].extend(texts[:3 - len(self.examples[name])])


def run_sequence(mod, config: dict, tally: Tally):
    """`config`'s passes on `mod` one at a time (stopping at one that raises), tallied."""
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        for step in config["passes"]:
            try:
                after = _run(mod, instantiate_pass(step))
            except Exception:  # noqa: BLE001 - a pass that raises is a campaign's finding, not ours
                return
            tally.after_pass(step["name"], mod, after)
            mod = after


def tally_case(request: dict) -> tuple[int, Tally]:
    """(sequences run, their tally) of one case's request, in a child process."""
    tally = Tally()
    try:
        mod = load_dialect("relax").lower(request)
        relax.analysis.well_formed(mod)
    except Exception:  # noqa: BLE001 - a case TVM refuses to lower has no sequences to run
        return 0, tally
    sequences = [config for config in request["configs"] if config.get("passes")]
    for config in sequences:
        run_sequence(mod, config, tally)
    return len(sequences), tally


class CaseRunner:
    """Each case in a child process: a pass that kills its process (TVM's SIGFPE in
    ConvertLayout, a campaign finding) costs that case, not the run."""

    def __init__(self):
        self.pool, self.killed = self._new_pool(), 0

    @staticmethod
    def _new_pool():
        return ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))

    def run(self, request: dict) -> tuple[int, Tally] | None:
        try:
            return self.pool.submit(tally_case, request).result()
        except BrokenProcessPool:
            self.killed += 1
            self.pool = self._new_pool()
            return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--ops", type=int, default=8)
    args = ap.parse_args(argv)
    info = dialect_info("relax")
    maker = CaseMaker(Settings(seed=args.seed, ops=args.ops, pass_checks=CHECK_SEQUENCES), load_specs(), info,
                      load_catalog([], builtin=info.catalog))
    runner, tally, cases, sequences, start = CaseRunner(), Tally(), 0, 0, time.time()
    while time.time() - start < args.seconds:
        got = runner.run(maker.make_case(cases).request)
        cases += 1
        if got is not None:
            sequences += got[0]
            tally.add(got[1])
    print(f"seed {args.seed}: {cases} cases ({runner.killed} killed their process), {sequences} sequences, "
          f"{time.time() - start:.0f} s")
    print(f"{'pass':36} {'runs':>6} {'known':>6} {'unexplained':>12}")
    for name in sorted(tally.runs, key=lambda n: (-tally.unexplained[n], -tally.known[n], n)):
        if tally.known[name] or tally.unexplained[name]:
            print(f"{name:36} {tally.runs[name]:6} {tally.known[name]:6} {tally.unexplained[name]:12}")
    for name, texts in tally.examples.items():
        for text in texts:
            print(f"  unexplained {name}: {text[:200]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
