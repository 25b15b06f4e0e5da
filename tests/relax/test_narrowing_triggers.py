"""tools/narrowing_triggers.py (issue 27): a call CanonicalizeBindings types narrower than
its operator infers, where a match_cast of its output binds the symbols to those very
constants, is a known (sound) refinement; a call typed static with nothing in the module
binding its symbols is unexplained."""
from __future__ import annotations

import tvm
import tvm.tirx as tirx
from tvm import relax
from tvm.relax.expr import _update_type
from tvm.script import ir as I, relax as R, tirx as T

from narrowing_triggers import Tally, justified, narrowings


@I.ir_module
class CastThroughSymbols:
    """x cast to symbols n, m and back around a sin; n also used as a value, which keeps
    CanonicalizeBindings from folding the first match_cast away (its
    SymbolicVarCanonicalizer: a runtime use of a symbol), so only the second goes."""
    @R.function
    def main(x: R.Tensor((6, 2), "float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            lv = R.match_cast(x, R.Tensor((n, m), "float32"))
            lv1 = R.sin(lv)
            lv2 = R.match_cast(lv1, R.Tensor((6, 2), "float32"))
            R.output(lv2)
        return (lv2, R.prim_value(n))


def static_sin_of_symbolic_param() -> tvm.IRModule:
    """main(x: (n, m)) whose sin is typed (6, 2): no match_cast says n is 6."""
    n, m = tirx.Var("n", "int64"), tirx.Var("m", "int64")
    x = relax.Var("x", relax.TensorType([n, m], "float32"))
    builder = relax.BlockBuilder()
    with builder.function("main", [x]):
        call = relax.Call(tvm.ir.Op.get("relax.sin"), [x])
        _update_type(call, relax.TensorType([6, 2], "float32"))
        builder.emit_func_output(builder.emit(call))
    return builder.get()


def test_canonicalize_bindings_narrowing_is_known_from_the_match_cast_it_keeps():
    after = relax.transform.CanonicalizeBindings()(CastThroughSymbols)
    assert list(narrowings(after)) == [
        'relax.sin: R.Tensor((6, 2), dtype="float32") where it infers R.Tensor((n, m), dtype="float32")']
    tally = Tally()
    tally.after_pass("CanonicalizeBindings", CastThroughSymbols, after)
    assert (tally.known["CanonicalizeBindings"], tally.unexplained["CanonicalizeBindings"]) == (1, 0)


def test_a_static_type_no_match_cast_backs_is_unexplained():
    narrowed = static_sin_of_symbolic_param()
    tally = Tally()
    tally.after_pass("SomePass", CastThroughSymbols, narrowed)
    assert (tally.known["SomePass"], tally.unexplained["SomePass"]) == (0, 1)
    assert tally.examples["SomePass"][0].startswith('relax.sin: R.Tensor((6, 2), dtype="float32") where it infers')


def test_a_pass_output_typed_as_inferred_is_no_trigger():
    tally = Tally()
    tally.after_pass("Normalize", CastThroughSymbols, relax.transform.Normalize()(CastThroughSymbols))
    assert tally.runs["Normalize"] == 1
    assert (tally.known["Normalize"], tally.unexplained["Normalize"]) == (0, 0)


def test_an_inferred_shape_expression_is_justified_by_the_value_its_symbols_are_cast_from():
    """relax.nn.pad typed (7,) where it infers (n + 4,): known where a match_cast binds n to 3."""
    n = tirx.Var("n", "int64")
    padded, inferred = relax.TensorType([7], "int8"), relax.TensorType([n + 4], "int8")
    assert justified(padded, inferred, {n: 3})
    assert not justified(padded, inferred, {n: 2})
    assert not justified(padded, inferred, {})


def test_a_tuple_type_is_justified_field_by_field():
    """relax.nn.batch_norm's (output, mean, variance), its output typed static."""
    n = tirx.Var("n", "int64")
    def outputs(dim):
        return relax.TupleType([relax.TensorType([dim, 3], "float64"), relax.TensorType([3], "float64")])
    assert justified(outputs(1), outputs(n), {n: 1})
    assert not justified(outputs(1), outputs(n), {n: 2})


def test_a_campaign_case_runs_each_of_its_pass_sequences(specs):
    """tally_case: every pass sequence of a campaign's case (its own and the check-only
    ones) is run, pass by pass."""
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.settings import Settings
    from hirfuzz.core.passes import load_catalog
    from hirfuzz.dialects import dialect_info
    from narrowing_triggers import CHECK_SEQUENCES, tally_case
    info = dialect_info("relax")
    maker = CaseMaker(Settings(seed=2, ops=4, pass_checks=CHECK_SEQUENCES), specs, info,
                      load_catalog([], builtin=info.catalog))
    request = maker.make_case(0).request
    sequences, tally = tally_case(request)
    assert sequences == len([config for config in request["configs"] if config.get("passes")]) > CHECK_SEQUENCES
    assert sum(tally.runs.values()) >= sequences
