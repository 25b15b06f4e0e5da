"""Relay lowering details that reproducers depend on, run under TVM 0.19."""
from relay_env import run_in_relay

# A reproducer carries the module as Relay text, which prints a scalar float constant with 6
# significant digits: a composite's constants must survive the trip exactly, or the script
# computes something else than the worker did (a mismatch "confirmed" by accident, or lost)
ROUND_TRIP_SCRIPT = """
import tvm
from tvm import relay
from hirfuzz.dialects.relay.ops import op_call

def arg(i):
    return {"input": [i]}

CASES = [("hirfuzz.gelu_tanh", 1, {}), ("hirfuzz.gelu", 1, {}), ("hirfuzz.selu", 1, {}),
         ("hirfuzz.atan2", 2, {}),
         ("hirfuzz.softplus", 1, {"beta": {"value": 1.7}, "threshold": {"value": 20.3}}),
         ("hirfuzz.layer_norm", 3, {"axes": {"value": [0, 1]}, "epsilon": {"value": 1.3e-5}}),
         ("hirfuzz.rms_norm", 2, {"axes": {"value": [0, 1]}, "epsilon": {"value": 1.3e-5}})]
for dtype in ("float64", "float32"):
    t = relay.TensorType((2, 3), dtype)
    for op, arity, kwargs in CASES:
        xs = [relay.var(f"x{i}", t) for i in range(arity)]
        record = {"op": op, "args": [arg(i) for i in range(arity)], "kwargs": {**kwargs, "dtype": {"value": dtype}}}
        body = op_call(record, xs, [x.type_annotation for x in xs])
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(xs, body)))
        parsed = relay.transform.InferType()(tvm.relay.fromtext(mod.astext(show_meta_data=True)))
        assert tvm.ir.structural_equal(parsed, mod), (op, dtype, mod.astext(show_meta_data=False))
print("ROUND TRIP OK")
"""


def test_composite_constants_survive_the_text_format_exactly():
    run = run_in_relay("-c", ROUND_TRIP_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ROUND TRIP OK" in run.stdout
