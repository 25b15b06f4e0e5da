"""A pass whose catalog entry says every failure of it is one root cause (`one_root_cause`) is
keyed on the pass alone (issue 27, one finding per root cause): TVM 0.19's DefuseOps inlines
a call of a function literal by substituting its body's variables by name, and fails on two
parameters of one name, on a captured variable (a null node) and by a SIGSEGV, one fault each
time (bench19 relay-now: three findings). Against real TVM 0.19: both raises, keyed by the
campaign's reducer as one."""
import json
import threading

import pytest

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.reducer import Job, Reduction
from hirfuzz.campaign.reduction_steps import Finishing
from hirfuzz.core.finding import Finding, crash_signature, pass_failed_in, pass_root_key
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError
from relay_env import run_in_relay

RUN_SCRIPT = r"""
import json, tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import failure_reply
t = relay.TensorType((2,), "float32")
x, y, a = relay.var("x", t), relay.var("y", t), relay.var("a", t)
p, q = relay.var("p", t), relay.var("p", t)
programs = {
    "same_names": relay.Function([x], relay.Call(relay.Function([p, q], relay.add(p, q)), [x, x])),
    "captures": relay.Function([x, y], relay.Call(relay.Function([a], relay.add(a, y)), [x])),
}
dialect, replies = load_dialect("relay"), {}
for name, func in programs.items():
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    try:
        dialect.apply_passes(mod, {"passes": [{"name": "DefuseOps", "args": {}}], "opt_level": 3})
    except Exception as exc:
        replies[name] = failure_reply(dialect, "passes", exc)
print("REPLIES " + json.dumps(replies))
"""


def test_two_faces_of_defuse_ops_by_name_substitution_are_one_root_key(tmp_path):
    proc = run_in_relay("-c", RUN_SCRIPT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = json.loads(proc.stdout.split("REPLIES ", 1)[1])
    assert set(replies) == {"same_names", "captures"}, replies
    assert "share the same variable name" in replies["same_names"]["message"]
    assert "Found null pointer node" in replies["captures"]["message"]
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0, dialect="relay"),
                        load_specs(dialect="relay"), progress=False)
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    keys = set()
    for reply in replies.values():
        signature = "pass-order|" + crash_signature(reply["stage"], reply["exc_type"], reply["message"],
                                                    reply["traceback"])
        finding = Finding(kind="crash", oracle="pass-order", stage=reply["stage"], signature=signature,
                          message=reply["message"], detail=reply["traceback"],
                          extra={"failed_pass": reply["failed_pass"]})
        job = Job("findings", None, finding, "", "key", signature)
        keys.add(reduction.root_key_of(job, Finishing(finding, campaign.maker.make_case(0))))
    assert keys == {pass_root_key("DefuseOps")}, keys
    # a worker's death in it too (its SIGSEGV says nothing fatal in its log)
    assert pass_failed_in({"died_in": {"stage": "passes", "pass": "DefuseOps"}}, "worker") == "DefuseOps"


def test_the_catalog_flag_is_read_and_checked(tmp_path):
    catalog = load_catalog(builtin=dialect_info("relay").catalog)
    assert catalog.entries["DefuseOps"].one_root_cause
    assert not catalog.entries["FoldConstant"].one_root_cause
    bad = tmp_path / "bad.yaml"
    bad.write_text("relay:\n  passes:\n    - {name: Mine, import: 'm:f', one_root_cause: yes please}\n")
    with pytest.raises(HirfuzzError, match="'one_root_cause' is true or false"):
        load_catalog([bad], builtin=dialect_info("relay").catalog)
