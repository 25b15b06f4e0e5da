"""The spec expression language: computes what specs need, refuses everything else."""
import numpy as np
import pytest
import z3

from hirfuzz.core import expr as E


def ev(text, **env):
    return E.compile_expr(text)(env)


def test_arithmetic_lists_and_comprehensions():
    assert ev("x[:a] + [7] + x[a + 1:]", x=[1, 2, 3], a=1) == [1, 7, 3]
    assert ev("[d * 2 for d in s if d > 1]", s=[1, 2, 3]) == [4, 6]
    assert ev("all(t > 0 for t in s)", s=[1, 2]) is True
    assert ev("a // b if b else 0", a=7, b=2) == 3
    assert ev("None if k else 3", k=True) is None


def test_shape_helpers():
    assert ev("broadcast_shapes([2, 1, 3], [4, 3])") == [2, 4, 3]
    assert ev("broadcastable([2, 3], [4, 3])") is False
    assert ev("reduce_shape([2, 3, 4], [-1, 0], True)") == [1, 3, 1]
    assert ev("window_out(5, 3, 2, 1, 1, 1)") == 3
    assert ev("matmul_shape([2, 3, 4], [4, 5])") == [2, 3, 5]


def test_same_expression_builds_z3_terms():
    c = E.compile_expr("window_out(h, k, s, 0, 0, 1) >= 1 and max(k, s) <= 3")
    k, s = z3.Int("k"), z3.Int("s")
    solver = z3.Solver()
    solver.add(c({"h": 4, "k": k, "s": s}), k >= 1, s >= 1)
    assert solver.check() == z3.sat
    m = solver.model()
    kv, sv = m[k].as_long(), m[s].as_long()
    assert c({"h": 4, "k": kv, "s": sv})


def test_random_draws_are_reproducible():
    a = ev("rand_factor_shape(24, 3)", __rng__=np.random.default_rng(5))
    b = ev("rand_factor_shape(24, 3)", __rng__=np.random.default_rng(5))
    assert a == b and int(np.prod(a)) == 24


@pytest.mark.parametrize("text", [
    "__import__('os')",
    "x.__class__",
    "open('/etc/passwd')",
    "(lambda: 1)()",
    "np.load('x.npy')",
    "getattr(x, 'shape')",
])
def test_forbidden_constructs_are_rejected(text):
    ns = {"np": E.Namespace("np", {"exp": np.exp})}
    with pytest.raises(E.ExprError):
        E.compile_expr(text, namespaces=ns)({"x": np.zeros(2)})


def test_unknown_name_is_an_expression_error():
    with pytest.raises(E.ExprError, match="unknown name 'y'"):
        ev("y + 1")


def test_a_registered_helper_is_callable_by_name_and_nothing_else_is():
    from hirfuzz.core import draws, shapes

    @shapes.shape_function
    def doubled_for_test(shape):
        return [2 * d for d in shape]

    @draws.random_function
    def coin_for_test(rng):
        return int(rng.integers(2))
    try:
        assert ev("doubled_for_test(x.shape)", x=np.zeros((2, 3))) == [4, 6]
        again = ev("coin_for_test()", __rng__=np.random.default_rng(1))
        assert again == ev("coin_for_test()", __rng__=np.random.default_rng(1)) and again in (0, 1)
    finally:
        del shapes.SHAPE_FUNCTIONS["doubled_for_test"], draws.RANDOM_FUNCTIONS["coin_for_test"]
    with pytest.raises(E.ExprError, match="'doubled_for_test' is not available"):
        ev("doubled_for_test([1])")
    with pytest.raises(ValueError, match="window_out"):
        shapes.shape_function(shapes.window_out)
