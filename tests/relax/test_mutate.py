"""Mutators (dialects/relax/mutators/): each keeps the program's meaning, honours its precondition, composes.

Real TVM: mutants must be well-formed, build after prepare_for_build, run, and agree with
the NumPy reference wherever the unmutated module does (a common prefix of the results:
expose_output appends extra results at the end).
"""
import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

from hirfuzz.core.plan import Knobs, plan_lowering  # noqa: E402
from hirfuzz.core.calls import call_records, op_traits  # noqa: E402
from hirfuzz.dialects.relax.lower import lower_graph  # noqa: E402
from hirfuzz.dialects.relax.mutators import MUTATORS, mutate  # noqa: E402

from test_lower_features import build_and_run, check_against_reference, make_case  # noqa: E402

LOWERING = Knobs(p_cut=0.3, p_local=0.4, p_if=0.0, p_match_cast=0.0, p_shape_of=0.0, p_tuple=0.0)


def _module(specs, seed, knobs=LOWERING, ops=None):
    graph, ci, rng = make_case(specs, seed) if ops is None else make_case(specs, seed, ops=ops)
    records = call_records(graph, specs)  # the traits table as a worker builds it from the case
    return graph, ci, lower_graph(graph, records, plan_lowering(graph, rng, knobs)), op_traits(records.values())


def _check(graph, ci, mod):
    relax.analysis.well_formed(mod)
    check_against_reference(graph, ci, build_and_run(mod, [ci.values[v.id] for v in graph.variables]))


@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_mutator_preserves_meaning(specs, name):
    m = MUTATORS[name]
    applied = 0
    for seed in range(40):
        graph, ci, mod, traits = _module(specs, 3000 + seed)
        if not m.applies(mod, traits) and name in ("reassociate", "const_merge"):
            mod = MUTATORS["const_split"].apply(mod, np.random.default_rng(seed), traits) \
                if MUTATORS["const_split"].applies(mod, traits) else mod
        if not m.applies(mod, traits):
            continue
        _check(graph, ci, m.apply(mod, np.random.default_rng(seed), traits))
        applied += 1
        if applied == 3:
            break
    if name != "distribute":  # (a+b)*c in one block is rare in random graphs
        assert applied, f"{name} applied to no module"


def test_distribute_on_its_pattern():
    x = relax.Var("x", relax.TensorType([2, 3], "int32"))
    y = relax.Var("y", relax.TensorType([3], "int32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            s = bb.emit(relax.op.add(x, y))
            out = bb.emit_output(bb.emit(relax.op.multiply(s, x)))
        bb.emit_func_output(out)
    mod = bb.get()
    assert MUTATORS["distribute"].applies(mod, {})
    mut = MUTATORS["distribute"].apply(mod, np.random.default_rng(0), {})
    relax.analysis.well_formed(mut)
    a = np.arange(6, dtype="int32").reshape(2, 3) - 3
    b = np.array([100000, -7, 2 ** 30], dtype="int32")  # overflow wraps alike
    np.testing.assert_array_equal(build_and_run(mod, [a, b])[0], build_and_run(mut, [a, b])[0])


def test_preconditions_are_honoured(specs):
    graph, _, rng = make_case(specs, 42, ops=["exp", "abs", "negative"])
    records = call_records(graph, specs)
    plain = lower_graph(graph, records)  # main only: no function to rewrite, no matmul, no add
    traits = op_traits(records.values())
    for name in ("func_to_closure", "wrap_return", "call_wrap", "matmul_transpose", "commute",
                 "reassociate", "const_split", "const_merge", "distribute"):
        assert not MUTATORS[name].applies(plain, traits), name
        with pytest.raises(ValueError):
            MUTATORS[name].apply(plain, np.random.default_rng(0), traits)
    assert MUTATORS["concat_split"].applies(plain, traits)


def test_traits_come_from_the_case_table():
    """An op is rewritten for a trait only when the case's table gives it that trait."""
    x = relax.Var("x", relax.TensorType([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.add(bb.emit(relax.op.exp(x)), x)))
        bb.emit_func_output(out)
    mod = bb.get()
    for name, op, trait in (("commute", "add", "commutative"), ("transpose_pair", "exp", "elementwise"),
                            ("resolve", "exp", "elementwise")):
        assert not MUTATORS[name].applies(mod, {}), name
        assert not MUTATORS[name].applies(mod, {op: frozenset()}), name
        assert MUTATORS[name].applies(mod, {op: frozenset({trait})}), name


def test_mutators_compose_and_reproduce(specs):
    for seed in range(3):
        graph, ci, mod, traits = _module(specs, 4000 + seed)
        m1, names1 = mutate(mod, np.random.default_rng(seed), 4, traits)
        m2, names2 = mutate(mod, np.random.default_rng(seed), 4, traits)
        assert names1 == names2 and len(names1) >= 2
        tvm.ir.assert_structural_equal(m1, m2)
        _check(graph, ci, m1)


def test_shipped_spec_set(specs):
    for seed in range(2):
        graph, ci, mod, traits = _module(specs, 5000 + seed, ops=specs.names())
        mut, names = mutate(mod, np.random.default_rng(seed), 3, traits)
        relax.analysis.well_formed(mut)
        if not ci.runnable:
            continue
        inputs = [ci.values[v.id] for v in graph.variables]
        base, outs = build_and_run(mod, inputs), build_and_run(mut, inputs)
        for a, b in zip(base, outs):  # common prefix
            assert a.shape == b.shape and a.dtype == b.dtype, names
            assert np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-3, atol=1e-3, equal_nan=True), names


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTATORS))
def test_mutator_deep(specs, name):
    m = MUTATORS[name]
    for seed in range(60):
        graph, ci, mod, traits = _module(specs, 6000 + seed, Knobs())
        if m.applies(mod, traits):
            _check(graph, ci, m.apply(mod, np.random.default_rng(seed), traits))
