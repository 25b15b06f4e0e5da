"""Strict generation: every insertion satisfies its spec; coverage guidance steers."""
import numpy as np
import pytest

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import GenStats, generate_graph
from hirfuzz.core.reference import op_env
from hirfuzz.core.solve import _solve_z3, solve
from hirfuzz.core.spec import SolveSpec
from hirfuzz.core import expr as E


def test_every_operator_satisfies_its_constraints_and_output_rule(specs):
    rng = np.random.default_rng(0)
    cov = Coverage()
    for _ in range(30):
        g = generate_graph(specs, rng, 20, cov)
        for node in g.operators:
            spec = specs.ops[node.op]
            env = op_env(spec, node, g)
            for c in spec.constraints:
                assert c(env), (node.op, c.text, node)
            if spec.solve:
                for c in spec.solve.constraints:
                    assert c(env), (node.op, c.text)
            assert node.dtype in spec.dtypes
            for ispec, item in zip(spec.inputs, node.inputs):
                if ispec.dtype is None:
                    refs = item if isinstance(item, list) else [item]
                    assert all(g.type_of(r).dtype == node.dtype for r in refs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coverage_guidance_covers_more_than_the_random_baseline(specs, seed):
    # few ops, so that the random baseline starts repeating itself within 30 graphs
    ops = ["add", "abs", "exp", "sum", "concat", "matmul", "reshape", "where"]

    def coverage(guided):
        cov, rng = Coverage(), np.random.default_rng(seed)
        for _ in range(30):
            generate_graph(specs, rng, 10, cov, guided=guided, ops=ops)
        return sum(cov.counts().values())
    assert coverage(True) > 1.1 * coverage(False)


def test_guided_insertions_add_coverage(specs):
    cov, stats = Coverage(), GenStats()
    generate_graph(specs, np.random.default_rng(2), 20, cov, stats=stats)
    # every kept insertion added at least one key, unless the reject budget ran out
    assert sum(cov.counts().values()) >= 20


def test_only_ops_and_dtypes_restrict_generation(specs):
    g = generate_graph(specs, np.random.default_rng(4), 10, Coverage(), ops=["add", "abs"],
                       dtypes=["int32"])
    assert {n.op for n in g.operators} <= {"add", "abs"}
    assert {n.dtype for n in g.operators} == {"int32"}


def _conv_like():
    cons = [E.compile_expr("window_out(h, k, s, p, p, d) >= 1"), E.compile_expr("k * d <= h + 2 * p")]
    return SolveSpec({"k": (1, 9), "s": (1, 4), "p": (0, 3), "d": (1, 3)}, cons)


def test_solver_values_satisfy_constraints():
    spec = _conv_like()
    rng = np.random.default_rng(0)
    for h in (1, 2, 5):
        values = solve(spec, {"h": h}, rng)
        assert values is not None
        assert all(c({"h": h, **values}) for c in spec.constraints)


def test_z3_binning_spreads_solutions():
    """Without binning z3 returns boundary values; the bins must give several kernels."""
    spec = _conv_like()
    rng = np.random.default_rng(1)
    kernels = set()
    for _ in range(30):
        values = _solve_z3(spec, {"h": 8}, rng, list(spec.vars))
        assert all(c({"h": 8, **values}) for c in spec.constraints)
        kernels.add(values["k"])
    assert len(kernels) >= 3


def test_solver_reports_infeasible():
    spec = SolveSpec({"k": (5, 9)}, [E.compile_expr("k <= h")])
    assert solve(spec, {"h": 2}, np.random.default_rng(0)) is None
