"""atan2 where the sign of a zero decides the result: no result is compared there.

atan2(+-0, x < 0) is +-pi by the zero's sign alone. TVM may rightly lose a zero's sign (an
arithmetic simplifier folds x * 0 to +0), and Relay's atan2 composite
(dialects/relay/ops.py) takes y >= 0 for -0: a Relay campaign filed 3 of 60 float64
elements off by 2*pi as a wrong result, a false alarm.
"""
import numpy as np
import pytest

from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.inputs import find_violations
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs

from relay_env import run_in_relay


def atan2_facts(specs, y, x):
    g = Graph()
    for v in (y, x):
        g.add(Node(len(g.nodes), "var", [TensorType((len(v),), "float64")]))
    g.add(Node(2, "op", [TensorType((len(y),), "float64")], op="atan2", dtype="float64",
               inputs=[Ref(0), Ref(1)], attrs={}))
    facts = interpret(g, specs, {0: np.float64(y), 1: np.float64(x)})
    return g, facts


@pytest.mark.parametrize("dialect", ["relax", "relay"])
def test_atan2_of_a_zero_and_a_non_positive_x_is_not_compared(dialect):
    specs = load_specs(dialect=dialect)
    for y, x in (([-0.0, 0.5], [-1.0, -1.0]), ([0.0, 0.5], [-1.0, 2.0]), ([0.0, 1.0], [-0.0, 1.0])):
        g, facts = atan2_facts(specs, y, x)
        assert facts[Ref(2)].failed, (y, x)
        assert not find_violations(g, specs, facts).clean  # the input search draws others
    # away from those points (a zero y with a positive x included) it is np.arctan2, compared
    g, facts = atan2_facts(specs, [-0.0, 0.5, -0.5, 1.0], [1.0, -1.0, -1.0, 0.0])
    assert not facts[Ref(2)].failed and facts[Ref(2)].stable
    np.testing.assert_array_equal(facts[Ref(2)].value, np.arctan2([-0.0, 0.5, -0.5, 1.0], [1.0, -1.0, -1.0, 0.0]))


RELAY_ATAN2 = """
import numpy as np, tvm
from tvm import relay
from tvm.contrib import graph_executor
from hirfuzz.dialects.relay.ops import relay_op
y, x = relay.var("y", shape=(5,), dtype="float64"), relay.var("x", shape=(5,), dtype="float64")
mod = tvm.IRModule.from_expr(relay.Function([y, x], relay_op("hirfuzz.atan2")(y, x, dtype="float64")))
lib = relay.build(mod, target="llvm")
m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
m.set_input("y", np.float64([-0.0, 0.5, -0.5, -0.0, 1.0])); m.set_input("x", np.float64([-1.0, -1.0, -1.0, 1.0, 0.0]))
m.run()
print(" ".join(repr(float(v)) for v in m.get_output(0).numpy()))
"""


def test_relay_atan2_agrees_with_the_reference_where_it_is_compared():
    done = run_in_relay("-c", RELAY_ATAN2)
    assert done.returncode == 0, done.stderr[-2000:]
    got = np.float64([float(v) for v in done.stdout.split()])
    # where the reference compares: within the transcendental tolerance of NumPy
    np.testing.assert_allclose(got[1:], np.arctan2([0.5, -0.5, -0.0, 1.0], [-1.0, -1.0, 1.0, 0.0]), rtol=1e-12)
    # where it does not: the composite says +pi for atan2(-0, -1), NumPy -pi
    assert got[0] == pytest.approx(np.pi) and np.arctan2(-0.0, -1.0) == pytest.approx(-np.pi)
