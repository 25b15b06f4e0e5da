"""Strict graphs are valid: well-formed, buildable, and equal to the reference when run.

A sample here; `tools/validity.py` runs the 500-graph check.
"""
import numpy as np
import pytest
from tvm import relax

from hirfuzz.dialects.relax.executors import build_module, run_module
from hirfuzz.protocol import make_config
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.inputs import choose_inputs
from hirfuzz.core.calls import call_records
from hirfuzz.dialects.relax.lower import lower_graph
from hirfuzz.core.oracle import compare_results

N_GRAPHS = 12


@pytest.fixture(scope="module")
def graphs(specs):
    rng, cov = np.random.default_rng(2026), Coverage()
    return [generate_graph(specs, rng, 20, cov) for _ in range(N_GRAPHS)]


@pytest.mark.parametrize("i", range(N_GRAPHS))
def test_strict_graph_is_well_formed_builds_and_matches_reference(specs, graphs, i):
    g = graphs[i]
    mod = lower_graph(g, call_records(g, specs))
    relax.analysis.well_formed(mod)
    config = make_config()
    ex = build_module(mod, config)
    chosen = choose_inputs(g, specs, np.random.default_rng(i))
    if not chosen.runnable:
        pytest.skip(f"every input draw may trap: {chosen.reason}")
    outs = run_module(ex, config, [chosen.values[n.id] for n in g.variables])
    expected = [chosen.facts[r] for r in g.results()]
    assert any(e.stable for e in expected), "nothing left to compare"
    assert compare_results(expected, outs) == []


def test_ill_conditioned_group_norm_is_compared_within_its_amplified_rounding(specs):
    """TVM computes a variance as E[x²] - E[x]², which cancels when a group's values are
    close: once a false alarm of hirfuzz (a 2-element group 0.5335, 0.5419 differed by 9e-3
    after scaling). The reference widens the tolerance by that amplification, and only
    there: a well-conditioned group keeps the class tolerance."""
    from hirfuzz.core.graph import Graph, Node, Ref, TensorType
    from hirfuzz.core.reference import interpret
    g = Graph()
    for i, shape in enumerate([(6, 2, 2), (2,), (2,)]):
        g.add(Node(i, "var", [TensorType(shape, "float32")]))
    attrs = {"num_groups": 2, "_spatial": [2], "epsilon": 1e-5}
    g.add(Node(3, "op", [TensorType((6, 2, 2), "float32")], op="nn.group_norm", dtype="float32",
               inputs=[Ref(0), Ref(1), Ref(2)], attrs=attrs))
    gamma = np.array([-0.0351, 3.3909], dtype="float32")
    beta = np.array([0.3149, 3.0702], dtype="float32")
    close = np.random.default_rng(0).uniform(1, 4, (6, 2, 2)).astype("float32")
    close[0, 1] = [0.53353739, 0.54187059]
    spread = np.tile(np.array([1.0, 3.0], dtype="float32"), (6, 2, 1))
    config = make_config()
    ex = build_module(lower_graph(g, call_records(g, specs)), config)
    tolerances = []
    for data in (close, spread):
        facts = interpret(g, specs, {0: data, 1: gamma, 2: beta})[Ref(3)]
        assert compare_results([facts], run_module(ex, config, [data, gamma, beta])) == []
        tolerances.append(facts.rtol)
    assert tolerances[0] > 10 * tolerances[1] and tolerances[1] == 1e-4
