"""A constant used at two places is one object in the module hirfuzz built, and in its
reproducers. FuseTransposeMatmul (TVM 0.27) crashes on matmul(c, permute_dims(c)) with one
constant c (its composite function gets one parameter, and its codegen reads the call's
second argument), and not with two equal ones: a campaign's reproducers, which made a new
object at each use, did not fail, and the real bug went to unconfirmed/."""
import numpy as np
import pytest
from tvm import relax
from tvm.script import relax as R

from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.core.finding import Finding, crash_signature
from hirfuzz.dialects.relax.dialect import RelaxDialect
from hirfuzz.dialects.relax.repro import WRITER, render_reproducer
from hirfuzz.protocol import error_reply, make_config

CONFIG = {**make_config("vm", "llvm"), "passes": [{"name": "FuseTransposeMatmul", "args": {}}]}


def transposed_product(shared: bool):
    """x + c @ permute_dims(c), with one constant object, or two equal ones."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((4, 4), "float32"))
    c = relax.const(np.arange(16, dtype="float32").reshape(4, 4))
    d = c if shared else relax.const(np.arange(16, dtype="float32").reshape(4, 4))
    with bb.function("main", [x]):
        with bb.dataflow():
            t = bb.emit(relax.op.permute_dims(d))
            m = bb.emit(relax.op.matmul(c, t))
            out = bb.emit_output(relax.op.add(m, x))
        bb.emit_func_output(out)
    return bb.get()


def _finding(mod) -> Finding:
    """The finding a worker's reply makes where the module fails in its passes."""
    try:
        RelaxDialect().apply_passes(mod, CONFIG)
    except Exception as exc:  # noqa: BLE001 - the failure is what the test is about
        reply = error_reply("passes", exc)
    else:
        pytest.fail("FuseTransposeMatmul no longer fails on a shared constant: the TVM bug is fixed")
    return Finding(kind="crash", oracle="crash", stage="passes",
                   signature=crash_signature("passes", reply["exc_type"], reply["message"], reply["traceback"]),
                   message=reply["message"], detail=reply["traceback"],
                   extra={"exc_type": reply["exc_type"], "config": CONFIG})


def _scripts(folder, mod, finding):
    script, consts = RelaxDialect().render(mod)
    module_script = {"script": script, "consts": consts}
    folder.mkdir()
    (folder / "check.py").write_text(render_reproducer(None, None, finding, CONFIG, [], False, None, "0.27",
                                                       module_script=module_script))
    (folder / "repro.py").write_text(WRITER.render_short(finding, CONFIG, [], False, None, module_script))
    return (folder / "repro.py").read_text()


def test_a_shared_constant_stays_one_object_in_both_reproducers(tmp_path):
    mod = transposed_product(shared=True)
    finding = _finding(mod)
    assert finding.extra["exc_type"] == "IndexError", finding.message
    short = _scripts(tmp_path / "shared", mod, finding)
    # defined once, named at both places
    assert "c0 = R.const(np.array(" in short and short.count("(c0") == 2, short
    outcome = check_finding_scripts(tmp_path / "shared", finding, 120, dialect="relax")
    assert outcome.reproduced, (outcome.observed, outcome.output[-2000:])


def test_two_equal_constants_stay_two_and_pass():
    mod = transposed_product(shared=False)
    RelaxDialect().apply_passes(mod, CONFIG)  # no crash: the bug needs one object
    script, consts = RelaxDialect().render(mod)
    assert len(consts) == 2 and script.count("_c[0]") == script.count("_c[1]") == 1
