"""What TVM 0.19's Relay documentation calls valid is valid on TVM 0.19 (issue 15 item 3):
reshape's 0 (copy this dimension) and -1, and topk with k < 1 (all elements), which
disruptive mode used to draw as violations (tests/core/test_documented_violations.py shows
none is drawn now)."""
from relay_env import run_in_relay

SCRIPT = r'''
import numpy as np
import tvm
from tvm import relay

def run(expr, x):
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    return relay.create_executor("vm", mod=mod, target="llvm").evaluate()(x).numpy()

x = relay.var("x", shape=(2, 3, 4), dtype="float32")
data = np.arange(24, dtype="float32").reshape(2, 3, 4)
assert run(relay.reshape(x, newshape=[0, -1]), data).shape == (2, 12)
assert run(relay.reshape(x, newshape=[-1, 3, 2, 2]), data).shape == (2, 3, 2, 2)
top = run(relay.topk(x, k=0, axis=1, ret_type="values"), data)
assert top.shape == (2, 3, 4) and np.array_equal(top, np.sort(data, axis=1)[:, ::-1]), top
print("documented-valid ok")
'''


def test_relay_runs_what_its_documentation_calls_valid():
    proc = run_in_relay("-c", SCRIPT)
    assert proc.returncode == 0 and "documented-valid ok" in proc.stdout, proc.stderr[-2000:]
