"""A cuda build failure retried on llvm (campaign.target_independence): a real TVM bug that
fails on every target is called target-independent, under the configuration that fails
alike; an error llvm does not give is not. TVM 0.27 builds for cuda to CUDA source without a
GPU (tools/cuda_build_check.py), so the cuda side runs here too.

The bug: relax.nn.prelu accepts a symbolic channel count (its struct info inference does),
but its legalization, topi.nn.prelu, asks get_const_int of that extent: "ValueError: Expect
value to be constant int", in LegalizeOps, on any target."""
import pytest
import tvm
from tvm.script import ir as I, relax as R, tirx as T  # noqa: F401 - what PRELU's TVMScript names

from hirfuzz.campaign.report import bug_report
from hirfuzz.campaign.target_independence import judge_target
from hirfuzz.campaign.verify import check_short_reproducer
from hirfuzz.core.finding import Finding, crash_signature, error_line
from hirfuzz.dialects import dialect_info
from hirfuzz.dialects.relax.dialect import RelaxDialect
from hirfuzz.dialects.relax.repro import WRITER
from hirfuzz.protocol import describe_config, error_reply, make_config

CUDA = {"kind": "cuda", "arch": "sm_90", "max_shared_memory_per_block": 49152, "max_num_threads": 1024,
        "thread_warp_size": 32}

PRELU = '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), a: R.Tensor((3,), dtype="float32")):
        c = T.int64()
        with R.dataflow():
            x1 = R.match_cast(x, R.Tensor((2, c), dtype="float32"))
            a1 = R.match_cast(a, R.Tensor((c,), dtype="float32"))
            y = R.nn.prelu(x1, a1, axis=1)
            R.output(y)
        return y
'''


def _module():
    return tvm.script.from_source(PRELU, extra_vars={"I": I, "R": R, "T": T})


def _cuda_build_finding() -> Finding:
    """The finding a worker's reply for the cuda build makes (as judge._crash makes it)."""
    config = make_config("vm", CUDA)
    try:
        RelaxDialect().build(_module(), config)
    except Exception as exc:  # noqa: BLE001 - the failure is what the test is about
        reply = error_reply("build", exc)
    else:
        raise AssertionError("prelu with a symbolic channel built for cuda: the TVM bug is fixed")
    return Finding(kind="crash", oracle="target", stage="build",
                   signature=crash_signature("build", reply["exc_type"], reply["message"], reply["traceback"]),
                   message=f"{error_line(reply['exc_type'], reply['message'])} under {describe_config(config, False)}",
                   detail=reply["traceback"], extra={"exc_type": reply["exc_type"], "config": config})


def _script_runner(tmp_path, finding: Finding, tried: list):
    """Renders the finding's repro.py for a configuration and runs it alone, as verify does."""
    def run_scripts(config: dict):
        tried.append(config)
        script = tmp_path / f"repro-{len(tried)}.py"
        script.write_text(WRITER.render_short(finding, config, [], False, None, {"script": PRELU, "consts": []}))
        return check_short_reproducer(script, finding, 120, dialect="relax")
    return run_scripts


def test_a_cuda_build_failure_that_fails_alike_on_llvm_is_target_independent(tmp_path):
    finding = _cuda_build_finding()
    assert "Expect value to be constant int" in finding.detail
    tried = []
    verdict = judge_target(finding, finding.extra["config"], dialect_info("relax").llvm_pipelines,
                           _script_runner(tmp_path, finding, tried))
    assert verdict is not None and verdict.independent
    # the fusing pipeline is tried first, and its script is a maintainer's paste-ready one
    assert verdict.alike_under == "vm on llvm (opt_level 3, target-default pipeline)"
    assert [c["target"] for c in tried] == ["llvm"]
    assert ("relax_pipeline=relax.get_default_pipeline(tvm.target.Target('llvm'))"
            in (tmp_path / "repro-1.py").read_text())
    verdict.record(finding)
    assert finding.extra["target_independent"] is True
    report = bug_report(finding.to_json(), (tmp_path / "repro-1.py").read_text(), None, {}, "vm on cuda (sm_90)",
                        dialect_info("relax"))
    assert "**Target-independent:** it fails alike on llvm too (vm on llvm (opt_level 3, target-default" in report
    assert "CUDA" not in report.splitlines()[0] and "cuda" not in report.splitlines()[0]


@pytest.mark.slow  # two scripts run alone
def test_an_error_llvm_does_not_give_is_not_target_independent(tmp_path):
    finding = _cuda_build_finding()
    # the same program, but a cuda failure of another message: llvm fails, not alike
    finding.detail = finding.detail.replace("Expect value to be constant int", "Cannot bind threads of a planted loop")
    tried = []
    verdict = judge_target(finding, finding.extra["config"], dialect_info("relax").llvm_pipelines,
                           _script_runner(tmp_path, finding, tried))
    assert verdict is not None and not verdict.independent
    assert [c["pipeline"] for c in tried] == ["target-default", "default"]


def test_only_build_crashes_off_llvm_are_retried():
    finding = Finding(kind="crash", oracle="crash", stage="build", signature="s", message="m",
                      extra={"exc_type": "ValueError"})
    never = lambda config: (_ for _ in ()).throw(AssertionError("ran a script"))  # noqa: E731
    pipelines = dialect_info("relax").llvm_pipelines
    assert judge_target(finding, make_config("vm", "llvm"), pipelines, never) is None
    finding.stage = "run"
    assert judge_target(finding, make_config("vm", CUDA), pipelines, never) is None
