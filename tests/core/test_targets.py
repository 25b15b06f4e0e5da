"""Targets as configurations carry them: a GPU's architecture named once, from the workers'
handshake, and the target oracle that judges a GPU's results against the reference within
the GPU's documented tolerance, its findings saying that the first target agreed."""
from __future__ import annotations

import numpy as np
import pytest

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.oracles import ORACLE_FIELD, Oracle, oracle_of
from hirfuzz.core.oracle import TargetTolerance, compare_results
from hirfuzz.core.reference import TensorFacts
from hirfuzz.core.spec import load_specs
from hirfuzz.core.targets import resolve_target, target_kind, target_label
from hirfuzz.dialects.relax.repro import WRITER
from hirfuzz.errors import SpecError
from hirfuzz.protocol import describe_config, encode_array

SM90 = {"kind": "cuda", "arch": "sm_90"}
SM90_H100 = {**SM90, "max_shared_memory_per_block": 49152, "max_num_threads": 1024, "thread_warp_size": 32}
GPU_HELLO = {"devices": {"cuda": True, "cuda_name": "NVIDIA H100 80GB HBM3", "cuda_target": SM90_H100}}


def test_a_cuda_target_names_the_architecture_the_workers_reported():
    assert resolve_target("cuda", GPU_HELLO) == SM90_H100
    assert resolve_target("llvm", GPU_HELLO) == "llvm"
    assert resolve_target("cuda", {"devices": {"cuda": False}}) == "cuda"  # nothing to name
    assert resolve_target({"kind": "cuda", "arch": "sm_80"}, GPU_HELLO) == {"kind": "cuda", "arch": "sm_80"}
    assert [target_kind(t) for t in ("llvm", "cuda", SM90)] == ["llvm", "cuda", "cuda"]
    assert target_label(SM90) == "cuda (sm_90)" and target_label("llvm") == "llvm"


def facts(value, exact=False, rtol=1e-5, atol=1e-6) -> TensorFacts:
    value = np.asarray(value)
    return TensorFacts(value, exact, True, rtol, atol, float(np.max(np.abs(value))), False, True)


def test_cuda_results_are_compared_within_the_fast_math_tolerance_the_specs_give(specs):
    cuda = TargetTolerance.of(specs, SM90)
    assert TargetTolerance.of(specs, "llvm") is None
    want = facts(np.float32([1.0, 2.0]))
    off = np.float32([1.0, 2.0 + 4e-5])  # outside float's 1e-5, inside CUDA's documented floor
    assert compare_results([want], [off]) and not compare_results([want], [off], target=cuda)
    assert compare_results([want], [np.float32([1.0, 2.1])], target=cuda)  # a real difference still is one
    exact = facts(np.float32([1.0, 2.0]), exact=True, rtol=0, atol=0)
    assert compare_results([exact], [off], target=cuda)  # a copy is a copy on any target


def test_a_target_tolerance_without_its_reason_is_refused(spec_copy):
    table = spec_copy / "tolerances.yaml"
    table.write_text(table.read_text().replace("    note: >-", "    why: >-"))
    with pytest.raises(SpecError, match="target_tolerances 'cuda'.*'note'"):
        load_specs(spec_copy)


@pytest.fixture
def gpu_campaign(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0, targets=["llvm", "cuda"]), load_specs(),
                        progress=False)
    campaign.maker.name_targets(GPU_HELLO)
    return campaign


def test_the_second_target_is_the_target_oracle_s_with_its_arch_named(gpu_campaign):
    configs = gpu_campaign.maker.make_case(0).configs
    assert (configs[0][ORACLE_FIELD], configs[0]["target"]) == ("reference", "llvm")
    assert [(c[ORACLE_FIELD], c["target"]) for c in configs if c["target"] != "llvm"] == [("target", SM90_H100)]
    assert "vm on cuda (sm_90)" in describe_config(configs[-1])
    old = {k: v for k, v in configs[-1].items() if k != ORACLE_FIELD}  # an older case.json's
    assert oracle_of(old) is Oracle.TARGET


def a_case_with_a_float_result(campaign):
    for index in range(200):
        case = campaign.maker.make_case(index)
        if case.runnable and any(f.stable and f.value.dtype.kind == "f" and f.value.size for f in case.expected):
            return case
    raise AssertionError("no case with a compared float result in 200")


def test_a_cuda_only_wrong_result_says_llvm_agrees_and_its_script_runs_both(gpu_campaign):
    case = a_case_with_a_float_result(gpu_campaign)
    right = [f.value for f in case.expected]
    wrong = [v + np.asarray(1.0 + np.abs(v), v.dtype) if v.dtype.kind == "f" else v for v in right]
    answer = {"status": "ok", "outputs": [encode_array(v) for v in right],
              "others": [{"status": "ok", "outputs": [encode_array(v if c["target"] == "llvm" else w)
                                                      for v, w in zip(right, wrong)]} for c in case.configs[1:]]}
    finding = gpu_campaign.judging.classify(case, answer).finding
    assert (finding.kind, finding.oracle) == ("wrong-result", "target")
    assert finding.signature.startswith("wrong-result|target|cuda|")
    assert "on cuda (sm_90)" in finding.message and "(llvm agrees with the reference)" in finding.message
    assert finding.extra["baseline_config"] == case.configs[0]
    expected = [(f.value if f.stable else None, f.rtol, f.atol) for f in case.expected]
    script = WRITER.render_short(finding, case.configs[-1], case.inputs, True, expected,
                                 {"script": "Module = None", "consts": []})
    compile(script, "repro.py", "exec")  # valid Python
    # the cuda build and the llvm build of the same module, llvm's results checked first
    assert "target=tvm.target.Target({'kind': 'cuda', 'arch': 'sm_90', " in script and "target='llvm'" in script
    assert script.index("baseline[") < script.index("outputs[")
    assert "vm = relax.VirtualMachine(ex, tvm.cuda())" in script


def test_a_cuda_crash_is_the_target_oracle_s(gpu_campaign):
    case = gpu_campaign.maker.make_case(0)
    crash = {"status": "error", "stage": "build", "exc_type": "InternalError",
             "message": "Check failed: planted", "traceback": "InternalError: Check failed: planted"}
    others = [crash if c["target"] != "llvm" else {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected]}
              for c in case.configs[1:]]
    answer = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected], "others": others}
    finding = gpu_campaign.judging.classify(case, answer).finding
    assert finding.oracle == "target" and finding.signature.startswith("target|crash|build|")
    assert "under vm on cuda (sm_90)" in finding.message


def test_the_report_says_how_far_each_target_got_and_what_it_left_out():
    from hirfuzz.campaign.report import _targets_section
    summary = {"targets_progress": {"llvm": {"compared": 50, "error:build": 2}, "cuda": {"compared": 48, "error:run": 3}},
               "generation": {"avoided": {"cuda": {"mod[float16]": 3}}, "plan_features_stripped": {"match_cast": 5}}}
    lines = _targets_section(summary)
    assert "- cuda: 48 compared, 3 error:run (of 51 cases)" in lines
    assert any("left out for cuda" in line and "mod[float16] 3" in line for line in lines)
    assert any("match_cast 5" in line for line in lines)
    assert _targets_section({"targets_progress": {"llvm": {"compared": 5}}}) == []  # one target: nothing to say
