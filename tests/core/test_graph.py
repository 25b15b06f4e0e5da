"""The Graph model: lossless JSON, and the same seed giving the same graphs."""
import numpy as np
from hypothesis import given, settings, strategies as st

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.graph import Graph


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 25))
def test_json_round_trip_is_lossless(specs, seed, n_ops):
    g = generate_graph(specs, np.random.default_rng(seed), n_ops, Coverage())
    text = g.dumps()
    back = Graph.loads(text)
    assert back.to_json() == g.to_json()
    assert back.dumps() == text
    for a, b in zip(g.nodes, back.nodes):
        assert a == b


def test_same_seed_same_graphs(specs):
    def campaign(seed):
        cov, rng = Coverage(), np.random.default_rng(seed)
        return [generate_graph(specs, rng, 15, cov).dumps() for _ in range(5)]
    assert campaign(11) == campaign(11)
    assert campaign(11) != campaign(12)


def test_results_are_unconsumed_operator_outputs(specs):
    g = generate_graph(specs, np.random.default_rng(3), 20, Coverage())
    used = g.consumers()
    for r in g.results():
        assert g.nodes[r.node].kind == "op" and r not in used
    assert len(g.operators) == 20
