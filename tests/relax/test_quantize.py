"""Quantization on Relax (opspecs/quantize.yaml): R.quantize and R.dequantize, built on llvm
by apache-tvm 0.27, agree with the spec's reference, whose halves round to even as TVM's
tir.round does on llvm (Relay's round them away from zero: tests/relay/test_relay_quantize.py)."""
import numpy as np
import tvm
from tvm import relax

from hirfuzz.core.reference import HELPERS
from hirfuzz.core.spec import load_specs


def test_relax_s_quantize_rounds_halves_to_even_as_its_reference_does():
    x = np.array([0.25, 0.75, 1.25, -1.25, 2.5, -300.0], "float32")   # halves of the scale, one clipped
    scale, zero_point = np.array(0.5, "float32"), np.array(3, "int32")
    bb = relax.BlockBuilder()
    params = [relax.Var(n, relax.TensorType(a.shape, str(a.dtype))) for n, a in (("x", x), ("s", scale),
                                                                                 ("z", zero_point))]
    with bb.function("main", params):
        quantized = bb.emit(relax.op.quantize(*params, axis=-1, out_dtype="int8"))
        dequantized = bb.emit(relax.op.dequantize(quantized, *params[1:], axis=-1, out_dtype="float32"))
        bb.emit_func_output(relax.Tuple([quantized, dequantized]))
    vm = relax.VirtualMachine(tvm.compile(bb.get(), target="llvm"), tvm.cpu())
    q, d = vm["main"](*(tvm.runtime.tensor(a) for a in (x, scale, zero_point)))
    reference = load_specs(dialect="relax").ops["quantize"].reference
    expected = reference({"x": x, "scale": scale, "zero_point": zero_point, "out_dtype": "int8"})
    assert q.numpy().tolist() == expected.tolist() == [3, 5, 5, 1, 8, -128]
    assert d.numpy().tolist() == HELPERS["dequantize"](expected, scale, zero_point).tolist()
