"""Issue 27: Relay ToMixedPrecision (TVM 0.19) rewrites each function on its own
(to_mixed_precision.cc: a call to a GlobalVar is returned as it was, the callee's return
type is erased and becomes float16), so a caller that declared float32 no longer
type-checks. That is one root cause whatever the rank of the tensor it shows at, and must be
one finding; an integer batch_matmul made float16 (a void out_dtype set to the mixed type
whatever the input dtype) is another, and keeps a key of its own. Whether the pass was
drawn to convert to float16 or to bfloat16 makes no other fault."""
import json

from hirfuzz.core.finding import crash_signature, ill_formed_signature, root_key
from relay_env import run_in_relay

# Each program through the Relay dialect's own pass step and well-formedness check (what a
# case's configuration runs); the reply's message as the worker makes it (protocol.error_reply)
SCRIPT = r'''
import json
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.dialects.base import IllFormedAfterPass
from hirfuzz.protocol import error_reply

PROGRAMS = {
    # @f1's result, float16 after the pass, passed on to @f2, which declares float32
    "float_through_a_call_rank2": """#[version = "0.0.5"]
def @f1() -> Tensor[(2, 1), float32] { nn.leaky_relu(ones(shape=[2, 1], dtype="float32"), alpha=0.1f) }
def @f2(%a: Tensor[(2, 1), float32]) -> Tensor[(2, 1), float32] { nn.relu(%a) }
def @main() -> Tensor[(2, 1), float32] { %0 = @f1(); let %r = @f2(%0); %r }
""",
    # @f1's result, float16 after the pass, returned by @main, which declares float32
    "float_returned_rank3": """#[version = "0.0.5"]
def @f1(%x: Tensor[(2, 3, 4), float32]) -> Tensor[(2, 3, 4), float32] { nn.leaky_relu(%x, alpha=0.1f) }
def @main(%y: Tensor[(2, 3, 4), float32]) -> Tensor[(2, 3, 4), float32] { let %r = @f1(%y); %r }
""",
    # an integer batch_matmul given out_dtype float16: uint16 declared, float16 returned
    "integer_batch_matmul": """#[version = "0.0.5"]
def @f1(%x: Tensor[(1, 2, 3), uint16], %w: Tensor[(1, 4, 3), uint16]) -> Tensor[(1, 2, 4), uint16] {
  nn.batch_matmul(%x, %w, transpose_b=True)
}
def @main(%x: Tensor[(1, 2, 3), uint16], %w: Tensor[(1, 4, 3), uint16]) -> Tensor[(1, 2, 4), uint16] {
  let %r = @f1(%x, %w); %r
}
""",
}
STEP = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "float16", "missing_op_mode": 2}}
BFLOAT16 = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "bfloat16", "missing_op_mode": 2}}
# the first fault again, the pass drawn to convert to bfloat16
RUNS = {**{name: (text, STEP) for name, text in PROGRAMS.items()},
        "float_returned_rank3_bfloat16": (PROGRAMS["float_returned_rank3"], BFLOAT16)}
dialect = load_dialect("relay")
replies = {}
for name, (text, step) in RUNS.items():
    mod = relay.transform.InferType()(tvm.relay.parse(text))
    try:
        dialect.apply_passes(mod, {"passes": [step], "opt_level": 3})
        replies[name] = None
    except IllFormedAfterPass as exc:
        replies[name] = {"blamed_pass": exc.pass_name,
                         "message": error_reply("ill_formed", exc.cause, dialect.take_diagnostics())["message"]}
print("REPLIES " + json.dumps(replies))
'''


def test_one_tvm_fault_at_two_ranks_has_one_root_key_and_another_fault_keeps_its_own():
    proc = run_in_relay("-c", SCRIPT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = json.loads(proc.stdout.split("REPLIES ", 1)[1])
    assert all(r and r["blamed_pass"] == "ToMixedPrecision" for r in replies.values()), replies
    signatures = {name: ill_formed_signature(r["blamed_pass"], r["message"]) for name, r in replies.items()}
    # different-looking findings: the signatures differ (the shapes' ranks), one root cause
    assert signatures["float_through_a_call_rank2"] != signatures["float_returned_rank3"]
    keys = {name: root_key("pass-order|" + s, {"pass-order|"}) for name, s in signatures.items()}
    assert keys["float_through_a_call_rank2"] == keys["float_returned_rank3"], keys
    assert keys["float_returned_rank3"].endswith("In particular `floatN` does not match `floatN`"), keys
    assert keys["integer_batch_matmul"] != keys["float_returned_rank3"], keys
    # signed or unsigned is the program's (ill_formed_root); without the message's widths, floatN
    assert keys["integer_batch_matmul"].endswith("In particular `floatN` does not match `intN`"), keys
    # float16 or bfloat16 is the pass's drawn argument, not another fault
    assert "bfloat16" in replies["float_returned_rank3_bfloat16"]["message"]
    assert keys["float_returned_rank3_bfloat16"] == keys["float_returned_rank3"], keys


# Each program through the worker's run_config (what a case's configuration runs): whether
# TVM's type checker raises at ToMixedPrecision's end (a crash in the pass) or the module it
# left is found ill-typed after it depends on the program, not on the fault
RUN_SCRIPT = r"""
import json
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import run_config

# @f1, rewritten on its own, returns float16 where @main's call declared float32
GLOBAL = '''#[version = "0.0.5"]
def @f1(%a: Tensor[(6, 6), float32]) -> Tensor[(6, 6), float32] { tanh(%a) }
def @main(%x0: Tensor[(6, 6), float32]) -> Tensor[(6, 6), float32] { @f1(%x0) }
'''
# the same, @main's argument computed first (cos, made float16, passed on uncast)
GLOBAL_AFTER_COS = '''#[version = "0.0.5"]
def @f1(%a: Tensor[(6, 6), float32]) -> Tensor[(6, 6), float32] { tanh(%a) }
def @main(%x0: Tensor[(6, 6), float32]) -> Tensor[(6, 6), float32] { %0 = cos(%x0); @f1(%0) }
'''
# an int16 conv2d given out_dtype float16, subtracted from an int16: BroadcastRel's words
CONV_SUBTRACT = '''#[version = "0.0.5"]
def @main(%x0: Tensor[(3, 1, 4, 6), int16], %x1: Tensor[(3, 1, 1, 3), int16], %y: Tensor[(3, 3, 4, 4), int16]) -> Tensor[(3, 3, 4, 4), int16] {
  %0 = nn.conv2d(%x0, %x1, padding=[0, 0, 0, 0], channels=3, kernel_size=[1, 3]);
  subtract(%0, %y)
}
'''
# a uint16 batch_matmul given out_dtype float16, in a global function: left ill-formed
BATCH_MATMUL = '''#[version = "0.0.5"]
def @f1(%x: Tensor[(1, 2, 3), uint16], %w: Tensor[(1, 4, 3), uint16]) -> Tensor[(1, 2, 4), uint16] {
  nn.batch_matmul(%x, %w, transpose_b=True)
}
def @main(%x: Tensor[(1, 2, 3), uint16], %w: Tensor[(1, 4, 3), uint16]) -> Tensor[(1, 2, 4), uint16] {
  let %r = @f1(%x, %w); %r
}
'''
MIXED = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "float16", "missing_op_mode": 2}}
ANF = {"name": "ToANormalForm", "args": {}}
RUNS = {"global_left_ill_formed": (GLOBAL, [ANF, MIXED]), "global_raised": (GLOBAL_AFTER_COS, [ANF, MIXED]),
        "int16_conv_raised": (CONV_SUBTRACT, [MIXED]), "uint16_batch_matmul_ill_formed": (BATCH_MATMUL, [MIXED])}
dialect = load_dialect("relay")
replies = {}
for name, (text, passes) in RUNS.items():
    mod = relay.transform.InferType()(tvm.relay.parse(text))
    reply = run_config(dialect, mod, {"passes": passes, "opt_level": 2}, [], run=False)
    replies[name] = {k: reply.get(k) for k in ("stage", "exc_type", "message", "traceback", "failed_pass", "blamed_pass")}
print("REPLIES " + json.dumps(replies))
"""


def _reply_key(reply: dict, construct: str) -> str:
    """The root key of a reply as a campaign keys it (judge, then reducer.root_key_of)."""
    if reply["stage"] == "ill_formed_after_pass":
        signature = ill_formed_signature(reply["blamed_pass"], reply["message"])
    else:
        signature = crash_signature(reply["stage"], reply["exc_type"], reply["message"], reply["traceback"])
    return root_key("pass-order|" + signature, {"pass-order|"}, reply["failed_pass"], reply["traceback"],
                    reply["message"], construct)


def test_a_mixed_precision_fault_raised_in_the_pass_or_left_ill_formed_has_one_key():
    proc = run_in_relay("-c", RUN_SCRIPT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = json.loads(proc.stdout.split("REPLIES ", 1)[1])
    stages = {name: r["stage"] for name, r in replies.items()}
    assert stages == {"global_left_ill_formed": "ill_formed_after_pass", "global_raised": "passes",
                      "int16_conv_raised": "passes", "uint16_batch_matmul_ill_formed": "ill_formed_after_pass"}, stages
    # the global call's stale float16: one key, as the campaign's plan says a global call carries it
    keys = {name: _reply_key(r, "global call") for name, r in replies.items()}
    assert keys["global_left_ill_formed"] == keys["global_raised"], keys
    assert keys["global_raised"] == "root|ill-formed|ToMixedPrecision|a float type left stale at: global call", keys
    # an integer made float16, int16 in BroadcastRel's words or uint16 in the type checker's: one key
    assert "BroadcastRel" in replies["int16_conv_raised"]["message"]
    assert keys["int16_conv_raised"] == keys["uint16_batch_matmul_ill_formed"] != keys["global_raised"], keys
    assert keys["int16_conv_raised"].endswith("In particular `halfN` does not match `intN`"), keys


# a let-bound closure nothing calls, and an If with no closure: each alone fails ToMixedPrecision
CLOSURE_AND_IF = r'''
import json
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
HEAD = '#[version = "0.0.5"]\n'
PROGRAMS = {
    "closure_never_called": HEAD + """def @main(%x: Tensor[(2, 3), float32]) {
  let %l = fn (%a: Tensor[(2, 3), float32]) { sigmoid(%a) };
  %x
}""",
    "if_without_a_closure": HEAD + """def @main(%x: Tensor[(2, 3), float32], %c: bool) {
  %0 = if (%c) { sigmoid(%x) } else { sigmoid(%x) };
  add(%0, %x)
}""",
    "closure_not_let_bound": HEAD + """def @main(%x: Tensor[(2, 3), float32]) {
  %0 = fn (%a: Tensor[(2, 3), float32]) { sigmoid(%a) };
  %1 = (%0, %x);
  %1.1
}""",
}
STEP = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "float16", "missing_op_mode": 2}}
dialect = load_dialect("relay")
failed = {}
for name, text in PROGRAMS.items():
    mod = relay.transform.InferType()(tvm.relay.parse(text))
    try:
        dialect.apply_passes(mod, {"passes": [STEP], "opt_level": 3})
        failed[name] = False
    except Exception:
        dialect.take_diagnostics()
        failed[name] = True
print("FAILED " + json.dumps(failed))
'''


def test_a_let_bound_closure_and_an_if_each_fail_mixed_precision_alone():
    """Why a stale float type carried by a let-bound closure and one carried by an If are
    keyed apart (core.finding.stale_type_carrier): each fails with nothing of the other, the
    closure with nothing calling it (so it is no call-boundary fault, as a global call is),
    and a closure that is not let-bound converts cleanly."""
    proc = run_in_relay("-c", CLOSURE_AND_IF, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = json.loads(proc.stdout.split("FAILED ", 1)[1])
    assert failed == {"closure_never_called": True, "if_without_a_closure": True, "closure_not_let_bound": False}
