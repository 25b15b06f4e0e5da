"""The gradient oracle's judgement (core/gradients.py) raises no alarm where the float64
reference's finite differences are off by its own rounding (a false alarm of bench20 relay-now
0025): tanh(16.8) is 1 - 45 ulp in float64, so moving the variable by the step leaves
acos(tanh) where it was, and the differences miss that term's slope (about 1e-7), which TVM's
gradient has: it agrees with the exact derivative (mpmath, 40 digits) to 5e-8 relative, the
differences to 1.3e-5. A gradient wrong by a whole value (the bugs the oracle finds) is still one."""
import json
from pathlib import Path

import numpy as np

from hirfuzz.core.gradients import expected_gradients, judge_estimate
from hirfuzz.core.graph import Graph
from hirfuzz.core.spec import load_specs

CASE = json.loads((Path(__file__).parent / "data" / "gradient_saturated_acos.json").read_text())
X1 = 1  # the node id of x1, batch_matmul's second operand


def _analytic_x1_gradient(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """d/dx1 of sum(tanh(x0 @ x1)) + sum(acos(tanh(x0 @ x1))), as reverse mode computes it."""
    t = np.tanh(np.matmul(x0, x1))
    with np.errstate(divide="ignore", invalid="ignore"):
        outer = np.nan_to_num((1 - t * t) * (1 - 1 / np.sqrt(1 - t * t)))  # 0 where t is +-1 exactly
    return np.matmul(np.swapaxes(x0, 1, 2), outer)


def _judged(gradient: np.ndarray):
    graph = Graph.from_json(CASE["graph"])
    inputs = [np.array(a, dtype=n.type.dtype) for a, n in zip(CASE["inputs"], graph.variables)]
    expected = expected_gradients(graph, inputs, load_specs(dialect="relay"))
    assert expected["precision"] == "float64"
    return judge_estimate(expected["estimates"][X1], X1, gradient, expected["precision"])


def test_the_differences_own_rounding_is_no_wrong_gradient():
    x0, x1 = (np.array(a) for a in CASE["inputs"][:2])
    judged = _judged(_analytic_x1_gradient(x0, x1))
    assert judged.judged > 10 and judged.wrong == [], judged


def test_a_gradient_wrong_by_a_whole_value_still_is():
    x0, x1 = (np.array(a) for a in CASE["inputs"][:2])
    wrong = _analytic_x1_gradient(x0, x1)
    wrong[1, 0, 2] += 1.0
    judged = _judged(wrong)
    assert [w[1] for w in judged.wrong] == [[1, 0, 2]], judged.wrong
