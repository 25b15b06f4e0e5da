"""A cuda failure retried on llvm (campaign.target_independence): a real TVM bug that fails
on every target is called target-independent, under the configuration that fails alike; an
error llvm does not give is not. TVM 0.27 builds for cuda to CUDA source without a GPU
(tools/cuda_build_check.py), so the cuda side of a build failure runs here too.

The build bug: relax.nn.prelu accepts a symbolic channel count (its struct info inference
does), but its legalization, topi.nn.prelu, asks get_const_int of that extent: "ValueError:
Expect value to be constant int", in LegalizeOps, on any target.

The run-time bug (FUSED_F1, reduced by a `--target llvm,cuda` campaign on an H100): a fusing
pipeline's FuseTIR runs RemoveUnusedParameters, which rewrites f1 under a new GlobalVar and
updates only its calls, so `get_f1` returns a function the VM cannot find ("Cannot find
ffi::Function f1"). cuda's own pipeline fuses, and so does llvm's cpu_generic one."""
import numpy as np
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


FUSED_F1 = '''@I.ir_module
class Module:
    @R.function(private=True)
    def f1(p0_0: R.Tensor((1,), dtype="uint8")) -> R.Tensor((1,), dtype="float16"):
        with R.dataflow():
            lv: R.Tensor((1,), dtype="float16") = R.ones_like(p0_0, dtype="float16")
            R.output(lv)
        return lv

    @R.function(private=True)
    def get_f1() -> R.Callable((R.Tensor((1,), dtype="uint8"),), R.Tensor((1,), dtype="float16"), True):
        cls = Module
        return cls.f1

    @R.function
    def main(x0: R.Tensor((1,), dtype="uint8")) -> R.Tensor((1,), dtype="float16"):
        cls = Module
        with R.dataflow():
            lv: R.Callable((R.Tensor((1,), dtype="uint8"),), R.Tensor((1,), dtype="float16"), True) = cls.get_f1()
            lv1: R.Tensor((1,), dtype="float16") = lv(x0)
            R.output(lv1)
        return lv1
'''
FUSED_F1_INPUTS = [np.array([7], dtype="uint8")]


def _module(script: str = PRELU):
    return tvm.script.from_source(script, extra_vars={"I": I, "R": R, "T": T})


def failure_finding(config: dict, script: str = PRELU, inputs: list | None = None) -> Finding:
    """The finding a worker's reply makes (as judge._crash makes it) where `script` fails
    under `config`: at build, or at run on `inputs`."""
    dialect, stage = RelaxDialect(), "build"
    try:
        built = dialect.build(_module(script), config)
        if inputs is not None:
            stage = "run"
            dialect.run(dialect.load(built, config), config, inputs)
    except Exception as exc:  # noqa: BLE001 - the failure is what the test is about
        reply = error_reply(stage, exc)
    else:
        raise AssertionError(f"the program ran under {describe_config(config, False)}: the TVM bug is fixed")
    return Finding(kind="crash", oracle="target", stage=stage,
                   signature=crash_signature(stage, reply["exc_type"], reply["message"], reply["traceback"]),
                   message=f"{error_line(reply['exc_type'], reply['message'])} under {describe_config(config, False)}",
                   detail=reply["traceback"], extra={"exc_type": reply["exc_type"], "config": config})


def _cuda_build_finding() -> Finding:
    return failure_finding(make_config("vm", CUDA))


def _script_runner(tmp_path, finding: Finding, tried: list, script: str = PRELU, inputs: list | None = None):
    """Renders the finding's repro.py for a configuration and runs it alone, as verify does."""
    def run_scripts(config: dict):
        tried.append(config)
        path = tmp_path / f"repro-{len(tried)}.py"
        path.write_text(WRITER.render_short(finding, config, inputs or [], inputs is not None, None,
                                            {"script": script, "consts": []}))
        return check_short_reproducer(path, finding, 120, dialect="relax")
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


def test_a_run_time_crash_that_fails_alike_on_llvm_is_target_independent(tmp_path):
    # without a GPU no cuda run exists: the finding is the one a cuda run makes (the same
    # VM frame and message, the H100 campaign's), its traceback taken from llvm's fusing run
    finding = failure_finding(make_config("fused"), FUSED_F1, FUSED_F1_INPUTS)
    assert finding.stage == "run" and "Cannot find ffi::Function f1" in finding.detail
    finding.extra["config"] = make_config("vm", CUDA)
    tried = []
    verdict = judge_target(finding, finding.extra["config"], dialect_info("relax").llvm_pipelines,
                           _script_runner(tmp_path, finding, tried, FUSED_F1, FUSED_F1_INPUTS))
    assert verdict is not None and verdict.independent
    assert verdict.alike_under == "vm on llvm (opt_level 3, target-default pipeline)"
    assert [c["pipeline"] for c in tried] == ["target-default"]


def test_only_build_and_run_crashes_off_llvm_are_retried():
    finding = Finding(kind="crash", oracle="crash", stage="build", signature="s", message="m",
                      extra={"exc_type": "ValueError"})
    never = lambda config: (_ for _ in ()).throw(AssertionError("ran a script"))  # noqa: E731
    pipelines = dialect_info("relax").llvm_pipelines
    assert judge_target(finding, make_config("vm", "llvm"), pipelines, never) is None
    finding.stage = "passes"
    assert judge_target(finding, make_config("vm", CUDA), pipelines, never) is None
    # a worker's death: no traceback to tell "alike" by
    death = Finding(kind="crash", oracle="crash", stage="worker", signature="s", message="killed by SIGSEGV",
                    extra={"signal": "SIGSEGV", "died_in": {"stage": "run", "config": 2}})
    assert judge_target(death, make_config("vm", CUDA), pipelines, never) is None


@pytest.mark.gpu
def test_the_run_time_crash_on_a_real_gpu_is_target_independent(tmp_path):
    # the cuda run itself: cuda's own pipeline fuses, and the VM cannot find f1 on the GPU
    target = RelaxDialect().describe_installation()["devices"]["cuda_target"]
    finding = failure_finding(make_config("vm", target), FUSED_F1, FUSED_F1_INPUTS)
    assert finding.stage == "run" and "Cannot find ffi::Function f1" in finding.detail
    tried = []
    verdict = judge_target(finding, finding.extra["config"], dialect_info("relax").llvm_pipelines,
                           _script_runner(tmp_path, finding, tried, FUSED_F1, FUSED_F1_INPUTS))
    assert verdict is not None and verdict.independent, tried
    assert [c["pipeline"] for c in tried] == ["target-default"]
