"""Choosing integer attributes under constraints: sampling first, then z3 with binning.

Most draws satisfy an op's constraints at once, so hirfuzz first samples each variable
from a random bin of its range and checks the constraints concretely (microseconds).
Only when a few draws all fail does it ask z3; then, as NNSmith does, each variable is
pinned to a random bin (low, middle or high part of its range) as an assumption, and the
assumptions in the unsat core are dropped one by one, so that solutions do not cluster at
the boundary of the feasible region.
"""
from __future__ import annotations

import z3

SAMPLE_TRIES = 12


def _bins(lo: int, hi: int) -> list[tuple[int, int]]:
    """Split [lo, hi] into up to three bins: the low end, the middle and the high end."""
    width = hi - lo + 1
    if width <= 3:
        return [(v, v) for v in range(lo, hi + 1)]
    a = lo + width // 3
    b = lo + 2 * width // 3
    return [(lo, a - 1), (a, b - 1), (b, hi)]


def _holds(constraints, env) -> bool:
    return all(bool(c(env)) for c in constraints)


def solve(solve_spec, env: dict, rng) -> dict[str, int] | None:
    """Values for `solve_spec.vars` satisfying its constraints in `env`, or None if none exist."""
    names = list(solve_spec.vars)
    for _ in range(SAMPLE_TRIES):
        values = {}
        for n in names:
            bins = _bins(*solve_spec.vars[n])
            lo, hi = bins[int(rng.integers(len(bins)))]
            values[n] = int(rng.integers(lo, hi + 1))
        if _holds(solve_spec.constraints, {**env, **values}):
            return values
    return _solve_z3(solve_spec, env, rng, names)


def _solve_z3(solve_spec, env, rng, names) -> dict[str, int] | None:
    # a context of its own: in z3's global one, the answer to the same query depends on what
    # the process solved before (its caches), so a case maker and the coordinator drew
    # different attributes for the same case of the same seed
    ctx = z3.Context()
    syms = {n: z3.Int(n, ctx) for n in names}
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", 2000)
    for n, (lo, hi) in solve_spec.vars.items():
        solver.add(syms[n] >= lo, syms[n] <= hi)
    sym_env = {**env, **syms}
    for c in solve_spec.constraints:
        solver.add(c(sym_env))
    assumptions = {}
    for n in names:
        bins = _bins(*solve_spec.vars[n])
        lo, hi = bins[int(rng.integers(len(bins)))]
        flag = z3.Bool(f"bin_{n}", ctx)
        solver.add(z3.Implies(flag, z3.And(syms[n] >= lo, syms[n] <= hi)))
        assumptions[flag.get_id()] = flag
    while True:
        result = solver.check(*assumptions.values())
        if result == z3.sat:
            model = solver.model()
            return {n: model.eval(syms[n], model_completion=True).as_long() for n in names}
        if result != z3.unsat or not assumptions:
            return None
        core = solver.unsat_core()
        if not core:
            assumptions.clear()
            continue
        victim = core[int(rng.integers(len(core)))]
        assumptions.pop(victim.get_id(), None)
