"""Passes that may change results on purpose (preserves_results: false) are drawn, and
their configurations are judged within the approximation their catalog entries document,
never exactly (no TVM: the catalogs, the reference's facts and the comparison)."""
import numpy as np
import pytest

from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.oracle import Approximation, compare_results
from hirfuzz.core.passes import draw_sequence, load_catalog
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError

HALF = {"compared": True, "rtol": 0.05, "atol": 0.01, "max_magnitude": 65504.0}


@pytest.mark.parametrize("dialect", ["relax", "relay"])
def test_every_drawable_pass_of_the_catalog_is_drawn_with_its_approximation(dialect):
    catalog = load_catalog(builtin=dialect_info(dialect).catalog)
    rng = np.random.default_rng(0)
    steps = [step for _ in range(2000) for step in draw_sequence(catalog, rng)]
    drawn = {step["name"] for step in steps}
    assert drawn == {e.name for e in catalog.drawable()}
    for step in steps:
        entry = catalog.entries[step["name"]]
        if entry.preserves_results:
            assert "approximation" not in step
        else:  # the step says how far it may move results, or that they are not compared
            assert step["approximation"] == {"compared": entry.approximation is not None,
                                             **(entry.approximation or {})}
    assert not any(step for step in steps if not catalog.entries[step["name"]].preserves_results
                   and catalog.entries[step["name"]].approximation is None
                   and step["approximation"]["compared"])


def test_only_preserving_draws_keep_them_out():
    catalog = load_catalog()
    rng = np.random.default_rng(1)
    names = {s["name"] for _ in range(500) for s in draw_sequence(catalog, rng, only_preserving=True)}
    assert not {"ToMixedPrecision", "FastMathTransform"} & names


@pytest.mark.parametrize("entry,needle", [
    ("{name: X, import: 'a:b', approximation: {rtol: 0.1, atol: 0.1}}", "preserves_results: false"),
    ("{name: X, import: 'a:b', preserves_results: false, approximation: {rtol: 0.1}}", "rtol and atol"),
    ("{name: X, import: 'a:b', preserves_results: false, approximation: {rtol: -1, atol: 0}}", "number >= 0"),
    ("{name: X, import: 'a:b', preserves_results: false, approximation: {rtol: 1, atol: yes}}", "number >= 0"),
])
def test_a_malformed_approximation_is_rejected_naming_the_entry(tmp_path, entry, needle):
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"passes:\n  - {entry}\n")
    with pytest.raises(HirfuzzError, match=needle) as err:
        load_catalog([mine])
    assert str(mine) in str(err.value) and "(X)" in str(err.value)


def test_a_sequence_takes_the_loosest_approximation_and_none_when_all_preserve():
    assert Approximation.of_passes([{"name": "A", "args": {}}]) is None
    fast = {"compared": True, "rtol": 1e-4, "atol": 1e-5}
    both = Approximation.of_passes([{"name": "F", "args": {}, "approximation": fast},
                                    {"name": "M", "args": {}, "approximation": HALF}])
    assert both == Approximation(True, 0.05, 0.01, 65504.0)
    uncompared = Approximation.of_passes([{"name": "F", "args": {}, "approximation": fast},
                                          {"name": "Q", "args": {}, "approximation": {"compared": False}}])
    assert uncompared == Approximation(False)


def node(g: Graph, kind: str, dtype="float32", shape=(4,), **fields) -> Ref:
    op_dtype = {"dtype": dtype} if kind == "op" else {}
    g.add(Node(len(g.nodes), kind, [TensorType(shape, dtype)], **op_dtype, **fields))
    return Ref(len(g.nodes) - 1)


def test_mixed_precision_is_compared_within_its_approximation_and_never_exactly():
    specs = load_specs()
    g = Graph()
    x = node(g, "var")
    c = node(g, "const", value=[2.9999, 0.5, 1.0, 3.0])
    top = node(g, "op", op="maximum", inputs=[x, c])  # exact: nothing rounds
    node(g, "op", op="floor", inputs=[top])           # discontinuous on a float
    node(g, "op", op="multiply", inputs=[x, x])
    node(g, "op", "int32", op="astype", inputs=[node(g, "var", "int8")], attrs={"to": "int32"})
    facts = interpret(g, specs, {0: np.float32([1.0, 2.0, 3.0, 300.0]), 5: np.int8([1, -2, 3, 4])})
    expected = [facts[r] for r in g.results()]
    floored, squared, ints = (f.value for f in expected)
    half = Approximation(True, 0.05, 0.01, 65504.0)
    # what float16 computes: 2.9999 rounds to 3, and so does its floor; the square overflows
    in_half = [np.float32([3.0, 2.0, 3.0, 300.0]), np.float32(np.full(4, np.inf)), ints.copy()]
    assert compare_results(expected, in_half)  # judged exactly, both differ: not how it is judged
    assert compare_results(expected, in_half, half) == []
    assert squared.max() == 90000.0 > half.max_magnitude  # beyond float16's range: not compared
    # within range, a result beyond the approximation is still a mismatch; integers that never
    # met a float are what the pass leaves alone, and are compared as they are
    small = interpret(g, specs, {0: np.float32([1.0, 2.0, 3.0, 30.0]), 5: np.int8([1, -2, 3, 4])})
    expected = [small[r] for r in g.results()]
    right = [expected[0].value, (expected[1].value * 1.001).astype("float32"), ints.copy()]
    assert compare_results(expected, right, half) == []
    wrong = [right[0], right[1] * 1.2, ints + np.int32([0, 0, 0, 1])]
    assert [m.index for m in compare_results(expected, wrong, half)] == [1, 2]
    # an approximation that is not compared judges nothing, not even the result types
    assert compare_results(expected, wrong, Approximation(False)) == []
    assert compare_results(expected, [a.astype("float16") for a in right], Approximation(False)) == []
    assert compare_results(expected, wrong[:2], Approximation(False))  # but the number of results
