"""Strict graphs are valid: well-formed, buildable, and equal to the reference when run.

A sample here; `tools/validity.py` runs the 500-graph check.
"""
import numpy as np
import pytest
from tvm import relax

from hirfuzz.compile import build_module, make_config
from hirfuzz.coverage import Coverage
from hirfuzz.generate import generate_graph
from hirfuzz.inputs import choose_inputs
from hirfuzz.lower import lower_graph
from hirfuzz.oracle import compare_results
from hirfuzz.run import run_module

N_GRAPHS = 12


@pytest.fixture(scope="module")
def graphs(specs):
    rng, cov = np.random.default_rng(2026), Coverage()
    return [generate_graph(specs, rng, 20, cov) for _ in range(N_GRAPHS)]


@pytest.mark.parametrize("i", range(N_GRAPHS))
def test_strict_graph_is_well_formed_builds_and_matches_reference(specs, graphs, i):
    g = graphs[i]
    mod = lower_graph(g, specs)
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
