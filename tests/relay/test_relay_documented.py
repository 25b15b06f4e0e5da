"""What TVM 0.19's Relay documentation calls valid is valid on TVM 0.19 (issue 15 item 3):
reshape's 0 (copy this dimension) and -1, topk with k < 1 (all elements), full_like with a
fill value of another dtype (cast), einsum broadcasting a letter of size 1 (numpy's
semantics), and dense and batch_matmul of two dtypes (mixed precision: both cast to the
output dtype), which disruptive mode used to draw as violations
(tests/core/test_documented_violations.py shows none is drawn now); what Relay rejects
(comparisons of two dtypes, a prelu slope of another dtype or length) is still broken."""
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

def run2(expr, *arrays):
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    return relay.create_executor("vm", mod=mod, target="llvm").evaluate()(*arrays).numpy()

i32 = relay.var("i", shape=(2, 3), dtype="int32")
fill = relay.var("f", shape=(), dtype="float16")
got = run2(relay.full_like(i32, fill), np.zeros((2, 3), "int32"), np.array(7.75, "float16"))
assert got.dtype == np.int32 and np.array_equal(got, np.full((2, 3), 7)), got
got = run2(relay.full(fill, (2, 3), "int32"), np.array(7.75, "float16"))
assert got.dtype == np.int32 and np.array_equal(got, np.full((2, 3), 7)), got

a, b = relay.var("a", shape=(1, 5), dtype="int32"), relay.var("b", shape=(5, 5), dtype="int32")
left, right = np.arange(5, dtype="int32").reshape(1, 5), np.arange(25, dtype="int32").reshape(5, 5)
assert np.array_equal(run2(relay.einsum([a, b], "ij,ij->i"), left, right), np.einsum("ij,ij->i", left, right))

data, weight = np.array([[1, 2, 3], [4, 5, 6]], "uint8"), np.full((4, 3), 2.7)
d, w = relay.var("d", shape=(2, 3), dtype="uint8"), relay.var("w", shape=(4, 3), dtype="float64")
got = run2(relay.nn.dense(d, w), data, weight)  # the weight cast to uint8 (2), as topi does
assert got.dtype == np.uint8 and np.array_equal(got, data @ weight.astype("uint8").T), got
d3, w3 = relay.var("d3", shape=(1, 2, 3), dtype="float32"), relay.var("w3", shape=(1, 3, 4), dtype="int8")
got = run2(relay.nn.batch_matmul(d3, w3, transpose_b=False), data[None].astype("float32"),
           np.full((1, 3, 4), -3, "int8"))
assert got.dtype == np.float32 and np.array_equal(got, data[None].astype("float32") @ np.full((1, 3, 4), -3.0)), got

def rejected(expr):
    try:
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr)))
    except tvm.TVMError:
        return True
    return False

assert rejected(relay.less(relay.var("p", shape=(3,), dtype="int32"), relay.var("q", shape=(3,), dtype="uint32")))
assert rejected(relay.nn.prelu(relay.var("x", shape=(2, 3), dtype="float64"),
                               relay.var("s", shape=(3,), dtype="float32")))
assert rejected(relay.nn.prelu(relay.var("x", shape=(2, 3)), relay.var("s", shape=(1,))))
print("documented-valid ok")
'''


def test_relay_runs_what_its_documentation_calls_valid():
    proc = run_in_relay("-c", SCRIPT)
    assert proc.returncode == 0 and "documented-valid ok" in proc.stdout, proc.stderr[-2000:]
