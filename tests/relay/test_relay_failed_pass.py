"""Issue 27: a Relay pass that raises with no TVM frame to say where (TVM 0.19's type
checker or a Check failed without a backtrace) used to be keyed `stage:passes` wherever its
reduced program kept more than one pass, so two faults of different passes could share a key
and one fault after another pass got a key of its own. The worker now says which pass of the
sequence raised (reply "failed_pass", from its breadcrumbs), and the root key names it."""
import json

from hirfuzz.core.finding import crash_signature, root_key
from relay_env import run_in_relay

_PREFIXES = {"pass-order|"}

# each program through the worker's own run_config (what a case's configuration runs)
SCRIPT = r'''
import json
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import run_config

# TVM 0.19: DefuseOps after ToGraphNormalForm meets a null node ("Found null pointer node
# while traversing AST") on a let-bound closure; it raises with no backtrace frame
CLOSURE = """#[version = "0.0.5"]
def @main(%x0: Tensor[(2, 2, 4), int8], %x1: Tensor[(2, 2, 1), int8]) -> Tensor[(2, 2, 4), int8] {
  let %local1: fn (Tensor[(2, 2, 1), int8]) -> Tensor[(2, 2, 4), int8] = fn (%a1_0: Tensor[(2, 2, 1), int8]) -> Tensor[(2, 2, 4), int8] {
    right_shift(%x0, %a1_0)
  };
  %local1(%x1)
}
"""
# TVM 0.19: ToMixedPrecision rewrites @f1 alone, so @main's call keeps float64 where @f1 now
# gives bfloat16 (the type checker raises at the end of the pass)
CALL = """#[version = "0.0.5"]
def @f1(%a: Tensor[(1, 1, 4, 5), float64]) -> Tensor[(1, 1, 3, 2), float64] {
  nn.avg_pool2d(%a, pool_size=[2, 3], strides=[1, 2], dilation=[2, 1], padding=[0, 0, 1, 1], count_include_pad=True)
}
def @main(%x0: Tensor[(1, 1, 4, 5), float64]) -> Tensor[(1, 1, 3, 2), float64] { @f1(%x0) }
"""
GNF = {"name": "ToGraphNormalForm", "args": {}}
DEFUSE = {"name": "DefuseOps", "args": {}}
MIXED = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "bfloat16", "missing_op_mode": 2}}
RUNS = {"defuse_after_gnf": (CLOSURE, [GNF, DEFUSE]), "mixed_after_gnf": (CALL, [GNF, MIXED]),
        "mixed_alone": (CALL, [MIXED])}
dialect = load_dialect("relay")
replies = {}
for name, (text, passes) in RUNS.items():
    mod = relay.transform.InferType()(tvm.relay.parse(text))
    reply = run_config(dialect, mod, {"passes": passes, "opt_level": 2}, [], run=False)
    replies[name] = {k: reply.get(k) for k in ("status", "stage", "exc_type", "message", "traceback", "failed_pass")}
print("REPLIES " + json.dumps(replies))
'''


def _key(reply: dict) -> str:
    signature = "pass-order|" + crash_signature(reply["stage"], reply["exc_type"], reply["message"], reply["traceback"])
    return root_key(signature, _PREFIXES, reply["failed_pass"])


def test_a_frameless_relay_pass_crash_is_keyed_on_the_pass_that_raised():
    proc = run_in_relay("-c", SCRIPT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = json.loads(proc.stdout.split("REPLIES ", 1)[1])
    assert all(r["status"] == "error" and r["stage"] == "passes" for r in replies.values()), replies
    assert {n: r["failed_pass"] for n, r in replies.items()} == {
        "defuse_after_gnf": "DefuseOps", "mixed_after_gnf": "ToMixedPrecision", "mixed_alone": "ToMixedPrecision"}
    keys = {name: _key(r) for name, r in replies.items()}
    assert "|pass:DefuseOps|" in keys["defuse_after_gnf"], keys
    # one ToMixedPrecision fault, whether or not another pass ran first: one key
    assert keys["mixed_after_gnf"] == keys["mixed_alone"], keys
    # Relay's type checker raised it at the pass's end: keyed as that pass's ill-typed output
    assert keys["mixed_alone"].startswith("root|ill-formed|ToMixedPrecision|"), keys


# TVM 0.19: AlterOpLayout's LayoutRewriter fails "new_out.size() == 1 (2 vs. 1)" on a conv2d
# followed by topk, with no backtrace frame; relay.build runs AlterOpLayout at opt_level 3
TOPK_AFTER_CONV = '''
import json
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.protocol import make_config
from hirfuzz.worker import run_config

TEXT = """#[version = "0.0.5"]
def @main(%x0: Tensor[(4, 2, 6, 2), float64], %x1: Tensor[(4, 2, 1, 3), float64]) -> Tensor[(4, 4, 6, 1), float64] {
  %0 = nn.conv2d(%x0, %x1, strides=[1, 3], padding=[1, 0, 2, 2], channels=4, kernel_size=[1, 3]);
  topk(%0, k=6, axis=-2, ret_type="values", dtype="int32")
}
"""
dialect = load_dialect("relay")
replies = {}
for name, passes in {"in_the_build": [], "in_the_sequence": [{"name": "AlterOpLayout", "args": {}}]}.items():
    mod = relay.transform.InferType()(tvm.relay.parse(TEXT))
    config = make_config("vm", passes=passes, opt_level=3, dialect="relay")
    reply = run_config(dialect, mod, config, [], run=False)
    replies[name] = {k: reply.get(k) for k in ("status", "stage", "exc_type", "message", "traceback", "failed_pass")}
print("REPLIES " + json.dumps(replies))
'''


def test_a_frameless_crash_of_a_pass_run_inside_the_build_is_keyed_as_the_same_pass_run_alone():
    proc = run_in_relay("-c", TOPK_AFTER_CONV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = json.loads(proc.stdout.split("REPLIES ", 1)[1])
    built, alone = replies["in_the_build"], replies["in_the_sequence"]
    assert (built["stage"], alone["stage"]) == ("build", "passes"), replies
    assert built["failed_pass"] == alone["failed_pass"] == "AlterOpLayout", replies
    keys = {name: _key(r) for name, r in replies.items()}
    assert keys["in_the_build"] == keys["in_the_sequence"] and "pass:AlterOpLayout" in keys["in_the_build"], keys
