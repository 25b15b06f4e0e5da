"""Relay mutators (dialects/relay/mutators.py), run under TVM 0.19 in the Relay environment."""
from relay_env import run_in_relay

# commute swaps the arguments of a call only where the case's traits say the op is
# commutative; the mutant type-checks and computes the same, alone and composed
COMMUTE_SCRIPT = """
import numpy as np
import tvm
from tvm import relay
from hirfuzz.dialects.relay.mutators import MUTATORS, mutate

x = relay.var("x", shape=(2, 3), dtype="float32")
y = relay.var("y", shape=(3,), dtype="float32")
body = relay.subtract(relay.add(x, y), relay.multiply(y, x))
mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y], body)))
rng = np.random.default_rng(0)
assert not MUTATORS["commute"].applies(mod, {})
assert not MUTATORS["commute"].applies(mod, {"subtract": frozenset({"elementwise"})})
traits = {"add": frozenset({"commutative"}), "multiply": frozenset({"commutative"}),
          "subtract": frozenset({"elementwise"})}
a = np.random.default_rng(1).standard_normal((2, 3)).astype("float32")
b = np.random.default_rng(2).standard_normal(3).astype("float32")
def run(m):
    return relay.create_executor("vm", mod=m, target="llvm").evaluate()(a, b).numpy()
for seed in range(4):
    mut = MUTATORS["commute"].apply(mod, np.random.default_rng(seed), traits)
    assert not tvm.ir.structural_equal(mut, mod)
    np.testing.assert_array_equal(run(mut), run(mod))
m2, names = mutate(mod, np.random.default_rng(3), 4, traits)
np.testing.assert_array_equal(run(m2), run(mod))
print("COMMUTE OK", names)
"""


def test_commute_follows_the_traits_table():
    run = run_in_relay("-c", COMMUTE_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "COMMUTE OK" in run.stdout
