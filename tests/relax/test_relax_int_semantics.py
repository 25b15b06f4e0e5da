"""Integer semantics against apache-tvm 0.27: single-op programs with overflowing inputs.

Where the reference compares a result (8- and 16-bit wrap-around, exact 64-bit means,
shifts inside the width), TVM computes exactly the reference's value. Where it does not
(a 32/64-bit overflow), TVM's result is undefined: the last tests show LLVM exploiting it.
"""
import numpy as np
import pytest
import tvm
from tvm import relax

from hirfuzz.core.calls import call_records
from hirfuzz.core.graph import Ref
from hirfuzz.core.reference import interpret
from hirfuzz.dialects.relax.executors import build_module, run_module
from hirfuzz.dialects.relax.lower import lower_graph
from hirfuzz.protocol import make_config
from overflow_cases import OVERFLOW_CASES, graph_of


def run_both(specs, op, dtype, *values, out_shape=None, **attrs):
    """(reference facts, TVM's result) of `op` on variables holding `values`."""
    g, arrays = graph_of(op, dtype, values, out_shape, attrs)
    facts = interpret(g, specs, dict(enumerate(arrays)))[Ref(len(arrays))]
    config = make_config()
    executable = build_module(lower_graph(g, call_records(g, specs)), config)
    got = run_module(executable, config, arrays)
    return facts, np.asarray(got[0] if isinstance(got, (list, tuple)) else got)


U64 = 2 ** 63

COMPARED = OVERFLOW_CASES


@pytest.mark.parametrize("op,dtype,values,out_shape,attrs", COMPARED,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(COMPARED)])
def test_tvm_computes_what_the_reference_compares(specs, op, dtype, values, out_shape, attrs):
    facts, got = run_both(specs, op, dtype, *values, out_shape=out_shape, **attrs)
    assert facts.stable and not facts.failed, "the reference should compare this case"
    assert got.dtype == facts.value.dtype and np.array_equal(got, facts.value), (got, facts.value)


def test_the_uint64_mean_false_alarm(specs):
    """The sum wraps: TVM's value is the wrapped sum over the count, which the reference now
    computes too (not np.mean cast back, which gave 2**62); but the wrap is nuw poison, so it
    is not compared."""
    facts, got = run_both(specs, "mean", "uint64", [U64, U64, 5, 7], out_shape=(), axis=None, keepdims=False)
    assert int(got) == int(facts.value) == 3
    assert facts.failed and not facts.stable


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_wide_overflow_is_undefined_in_tvm(dtype):
    """Why a 32/64-bit overflow is never compared: fused into one kernel, LLVM exploits the
    nsw/nuw flags TVM's codegen puts on add, so `x + 1 > x` holds even for the maximum."""
    x = np.array([np.iinfo(dtype).max, 5], dtype=dtype)
    bb = relax.BlockBuilder()
    p = relax.Var("x", relax.TensorType(x.shape, dtype))
    with bb.function("main", [p]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.greater(relax.op.add(p, relax.const(1, dtype)), p))
        bb.emit_func_output(out)
    mod = tvm.ir.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(), relax.transform.FuseTIR()])(bb.get())
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    got = vm["main"](tvm.runtime.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        wrapped = (x + np.array(1, dtype=dtype)) > x
    assert got.tolist() == [True, True] and wrapped.tolist() == [False, True]
