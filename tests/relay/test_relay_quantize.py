"""Quantization on Relay (opspecs/quantize.yaml): qnn.quantize and qnn.dequantize are drawn
like any operator, compared with a reference that rounds halves as TVM 0.19 does, and give
FakeQuantizationToInteger something to rewrite. Real TVM 0.19, in its own environment."""
import json

import numpy as np

from hirfuzz.core.reference import HELPERS
from hirfuzz.core.spec import load_specs
from relay_env import relay_interpreter_alone, run_in_relay
from reproducer_rules import run_alone
from test_relay_campaign import relay_campaign


def test_fake_quantization_to_integer_making_a_requantize_relay_cannot_type_is_found_and_reproduces_alone(tmp_path):
    # TVM 0.19's FakeQuantizationToInteger rewrites dequantize then quantize into
    # qnn.requantize, whose RequantizeRel (src/relay/qnn/op/requantize.cc) takes no uint16
    # output, which qnn.quantize does: the valid program no longer type-checks after the pass
    out = tmp_path / "out"
    proc = relay_campaign("--only-ops", "quantize,dequantize", "--ops", 2, "--iterations", 12, "--seed", 1,
                          "--pass-seq", "FakeQuantizationToInteger", "--jobs", 1, "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [] and summary["compared"] > 0
    assert not [f for f in summary["findings"] if f["kind"] == "wrong-result"], summary["findings"]
    [requantize] = [out / f["path"] for f in summary["findings"] if "Output type should be one of" in f["message"]]
    script = (requantize / "repro.py").read_text()
    assert "qnn.dequantize(" in script and "qnn.quantize(" in script and 'out_dtype="uint16"' in script, script
    assert "FakeQuantizationToInteger" in script
    python, env = relay_interpreter_alone()
    alone = run_alone(python, requantize, "repro.py", env)
    assert alone.returncode == 1 and "Output type should be one of [int8, uint8, int16, int32]" in alone.stderr, (
        alone.stdout + alone.stderr[-3000:])


# halves of the scale, and one value clipped; the worker's environment has no yaml, so the
# script prints TVM's results and the spec's reference is computed here
X, SCALE, ZERO_POINT = [0.25, 0.75, 1.25, -1.25, 2.5, -300.0], 0.5, 3
HALVES_SCRIPT = f"""
import json
import numpy as np
import tvm
from tvm import relay

x, scale, zero_point = np.array({X}, "float32"), np.array({SCALE}, "float32"), np.array({ZERO_POINT}, "int32")
args = [relay.var(n, shape=a.shape, dtype=str(a.dtype)) for n, a in (("x", x), ("s", scale), ("z", zero_point))]
quantized = relay.qnn.op.quantize(*args, out_dtype="int8")
outputs = relay.Tuple([quantized, relay.qnn.op.dequantize(quantized, *args[1:])])
q, d = relay.create_executor("vm", mod=tvm.IRModule.from_expr(relay.Function(args, outputs)),
                             target="llvm").evaluate()(x, scale, zero_point)
print(json.dumps([q.numpy().tolist(), d.numpy().tolist()]))
"""


def test_relay_s_quantize_rounds_halves_away_from_zero_as_its_reference_does():
    run = run_in_relay("-c", HALVES_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    quantized, dequantized = json.loads(run.stdout.strip().splitlines()[-1])
    x, scale, zero_point = np.array(X, "float32"), np.array(SCALE, "float32"), np.array(ZERO_POINT, "int32")
    reference = load_specs(dialect="relay").ops["quantize"].reference
    expected = reference({"x": x, "scale": scale, "zero_point": zero_point, "out_dtype": "int8"})
    assert quantized == expected.tolist() == [4, 5, 6, 0, 8, -128]   # to even: 3, 5, 5, 1 (Relax)
    assert dequantized == HELPERS["dequantize"](expected, scale, zero_point).tolist()
