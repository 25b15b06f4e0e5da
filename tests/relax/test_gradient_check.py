"""tools/gradient_check.py (issue 27): Relax's autodiff (relax.transform.Gradient) against
finite differences of hirfuzz's NumPy reference. Each TVM bug it found is kept here as a
minimal program; a correct gradient must be judged correct.

The TVM source each bug comes from (apache/tvm main, 5d4dc87; the same in apache-tvm 0.27):
- cumsum-exclusive: python/tvm/relax/op/_op_gradient.py:837, cumsum_grad ignores
  `exclusive` (it returns the inclusive cumsum's gradient);
- where-broadcast: _op_gradient.py:928-929, where_grad returns the output's gradient
  shape for a broadcast value, never collapse_sum_to its own shape;
- triu-partials: _op_gradient.py:436, triu_grad returns one partial for triu's two
  arguments (x, k), which src/relax/transform/gradient.cc:402 rejects.
"""
from __future__ import annotations

import numpy as np

from gradient_check import judge_case, known_bug
from graph_json import graph_of, op, var


def test_correct_gradient_is_judged_correct():
    """sum(tanh(x @ w)): TVM's gradient is right, and every element is judged (none skipped)."""
    rng = np.random.default_rng(0)
    graph = graph_of(var(0, [3, 4]), var(1, [4, 2]),
                     op(2, "matmul", [[0, 0], [1, 0]], [3, 2]), op(3, "tanh", [[2, 0]], [3, 2]))
    result = judge_case(graph, {0: rng.normal(size=(3, 4)), 1: rng.normal(size=(4, 2))}, "float64")
    assert result["outcome"] == "ok", result
    assert (result["judged"], result["skipped"]) == (3 * 4 + 4 * 2, 0)


def test_kink_is_skipped_not_judged():
    """relu at exactly 0 (a kink: its one-sided differences disagree) is skipped; the other
    elements are judged and right."""
    graph = graph_of(var(0, [3]), op(1, "nn.relu", [[0, 0]], [3]))
    result = judge_case(graph, {0: np.array([-1.0, 0.0, 2.0])}, "float64")
    assert result["outcome"] == "ok", result
    assert (result["judged"], result["skipped"]) == (2, 1)


def test_cumsum_exclusive_gradient_is_wrong():
    """sum(cumsum(x, exclusive=True)) = 2*x0 + x1 for x of 3: TVM says (3, 2, 1)."""
    graph = graph_of(var(0, [3]), op(1, "cumsum", [[0, 0]], [3], {"axis": 0, "exclusive": True}))
    result = judge_case(graph, {0: np.array([1.0, 2.0, 3.0])}, "float64")
    assert result["outcome"] == "wrong", result
    tvm_grad = [got for _, _, got, _ in result["wrong"]]
    expected = [fd for _, _, _, fd in result["wrong"]]
    assert tvm_grad == [3.0, 2.0, 1.0]
    np.testing.assert_allclose(expected, [2.0, 1.0, 0.0], atol=1e-6)
    assert known_bug(result, graph) == "cumsum-exclusive"


def test_where_gradient_of_a_broadcast_value_has_the_output_shape():
    """where(c, x, y) with x of shape (3,) broadcast to (2, 3): x's gradient comes back (2, 3)."""
    graph = graph_of(var(0, [2, 3], "bool"), var(1, [3]), var(2, [2, 3]),
                     op(3, "where", [[0, 0], [1, 0], [2, 0]], [2, 3]))
    values = {0: np.array([[True, False, True], [False, True, True]]), 1: np.array([1.0, 2.0, 3.0]),
              2: np.ones((2, 3))}
    result = judge_case(graph, values, "float64")
    assert result["outcome"] == "shape", result
    assert "x1 (3,) got (2, 3)" in result["message"]
    assert known_bug(result, graph) == "where-broadcast"


def test_triu_gradient_crashes():
    graph = graph_of(var(0, [3, 3]), op(1, "triu", [[0, 0]], [3, 3], {"k": 0}))
    result = judge_case(graph, {0: np.ones((3, 3))}, "float64")
    assert result["outcome"] == "gradient", result
    assert "partials number != inputs number" in result["message"]
    assert known_bug(result, graph) == "triu-partials"


def test_a_variable_reaching_a_declared_no_grad_input_is_not_asked_for():
    """full_like's fill value is declared no_grad by TVM: its variable's gradient leaves that
    path out by definition, so it is not asked for; the other variable's is, and judged."""
    graph = graph_of(var(0, [2]), var(1, []), op(2, "full_like", [[0, 0], [1, 0]], [2], {"to": None}),
                     op(3, "multiply", [[2, 0], [0, 0]], [2]))
    result = judge_case(graph, {0: np.array([1.0, 2.0]), 1: np.array(3.0)}, "float64")
    assert result["outcome"] == "ok", result
    assert result["judged"] == 2, result


def test_avg_pool_ceil_mode_gradient_disagrees_with_its_forward():
    """avg_pool2d of [1, 2, 3, 4], pool 3, stride 3, ceil_mode, count_include_pad: the forward
    is [1, 2, 3] / 3 + [4] / 1 (TVM's forward agrees), so x3's gradient is 1; TVM's is 1/3
    (include/tvm/topi/nn/pooling.h:192 divides by the whole pool)."""
    attrs = {"ceil_mode": True, "count_include_pad": True, "kh": 1, "kw": 3, "sh": 1, "sw": 3,
             "pt": 0, "pl": 0, "pb": 0, "pr": 0, "dh": 1, "dw": 1}
    graph = graph_of(var(0, [1, 1, 1, 4]), op(1, "nn.avg_pool2d", [[0, 0]], [1, 1, 1, 2], attrs))
    result = judge_case(graph, {0: np.array([[[[1.0, 2.0, 3.0, 4.0]]]])}, "float64")
    assert result["outcome"] == "wrong", result
    assert [(index, round(got, 6)) for _, index, got, _ in result["wrong"]] == [([0, 0, 0, 3], round(1 / 3, 6))]
    assert known_bug(result, graph) == "avg-pool-ceil-divisor"
