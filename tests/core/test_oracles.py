"""The oracles' registry (campaign/oracles/): every configuration a case is made with names
the oracle that judges it, and a configuration from before that field (an older campaign's
case.json) is judged by the oracle its shape implied, so old findings replay alike."""
from __future__ import annotations

import pytest

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.oracles import ORACLE_FIELD, ORACLES, Oracle, oracle_of
from hirfuzz.core.spec import load_specs
from hirfuzz.protocol import encode_array


def without_field(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != ORACLE_FIELD}


def crash_reply(message: str) -> dict:
    return {"status": "error", "stage": "build", "exc_type": "InternalError", "message": message,
            "traceback": f"InternalError: {message}"}


@pytest.fixture
def campaign(tmp_path):
    settings = Settings(out=str(tmp_path / "out"), iterations=0, executors=["vm", "compiled"], mutations=1,
                        pass_seq=[{"name": "FoldConstant", "args": {}}])
    return Campaign(settings, load_specs(), progress=False)


def test_every_oracle_is_registered_under_its_name():
    assert set(ORACLES) == set(Oracle)
    assert all(name is oracle.name for name, oracle in ORACLES.items())
    # reduction keeps the baseline beside these oracles' configurations
    assert {name for name, oracle in ORACLES.items() if oracle.against_baseline} == {
        Oracle.PASS_ORDER, Oracle.EXECUTOR, Oracle.MUTATION, Oracle.TARGET}


def test_each_configuration_of_a_case_names_the_oracle_its_shape_implied(campaign):
    configs = campaign.maker.make_case(0).configs
    # the mutant comes after what it is derived from: built plainly, then after the pass sequence
    assert [c[ORACLE_FIELD] for c in configs] == ["reference", "pass-order", "executor", "mutation", "mutation"]
    assert [(c.get("module"), c["passes"]) for c in configs[3:]] == [(1, []), (1, configs[1]["passes"])]
    # an older case.json's configurations, without the field, are judged by the same oracles
    assert [oracle_of(without_field(c)) for c in configs[1:]] == [oracle_of(c) for c in configs[1:]]


def test_a_configuration_without_the_field_is_judged_as_one_with_it(campaign):
    case = campaign.maker.make_case(0)
    baseline = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected]}
    answer = {**baseline, "others": [crash_reply("Check failed: planted")] * 3}
    found = campaign.judging.classify(case, answer).finding
    old = campaign.maker.make_case(0, case.graph, configs=[without_field(c) for c in case.configs],
                                   lowering=case.lowering)
    was = campaign.judging.classify(old, answer).finding
    assert found.oracle == Oracle.PASS_ORDER and found.signature.startswith("pass-order|crash|build|")
    assert (was.oracle, was.signature) == (found.oracle, found.signature)


def test_a_pass_sequence_dropped_leaves_the_executor_oracle_s_configuration(campaign):
    config = campaign.maker.make_case(0).configs[1]
    alone = ORACLES[Oracle.PASS_ORDER].without_passes(config)
    assert alone["passes"] == [] and oracle_of(alone) is Oracle.EXECUTOR
    assert oracle_of(without_field(alone)) is Oracle.EXECUTOR  # as the shape alone said


def ok_reply(case, wrong: bool = False) -> dict:
    outputs = [f.value + 1 if wrong else f.value for f in case.expected]
    return {"status": "ok", "outputs": [encode_array(o) for o in outputs]}


def test_a_mutant_wrong_only_after_the_passes_the_original_passed_is_tvm_s(campaign):
    """oracles/mutation.py: after the pass sequence, with the original after the same passes
    and the plain mutant agreeing, the mutant's wrong result is TVM's (a pass bug), the
    rewrites named; the plain mutant's is a mutant disagreement, hirfuzz's first suspect."""
    case = campaign.maker.make_case(0)
    campaign.tallies.mutators_of[case.index] = ["func_to_closure"]
    assert case.runnable
    fine = ok_reply(case)
    after_passes = {**fine, "others": [fine, fine, fine, ok_reply(case, wrong=True)]}
    found = campaign.judging.classify(case, after_passes).finding
    assert (found.kind, found.oracle) == ("wrong-result", "mutation")
    assert found.signature == "wrong-result|mutation|vm:llvm|FoldConstant"
    assert found.extra["mutators"] == ["func_to_closure"] and found.extra["config"]["module"] == 1
    assert "while the original program agrees" in found.message

    plain = {**fine, "others": [fine, fine, ok_reply(case, wrong=True), ok_reply(case, wrong=True)]}
    found = campaign.judging.classify(case, plain).finding
    assert found.kind == "mutant-disagreement" and found.signature.startswith("mutant-disagreement|func_to_closure|")

    # the original failing after the same passes is the pass-order oracle's, whatever the mutant does
    original = {**fine, "others": [ok_reply(case, wrong=True), fine, fine, ok_reply(case, wrong=True)]}
    assert campaign.judging.classify(case, original).finding.oracle == "pass-order"


def test_a_mutant_s_crash_is_keyed_as_the_same_crash_of_the_configuration_it_mirrors(campaign):
    """One root cause, one finding: a mutant's crash after the passes is the pass-order
    oracle's signature, a plain mutant's the baseline's; the finding still names the mutant."""
    case = campaign.maker.make_case(0)
    campaign.tallies.mutators_of[case.index] = ["wrap_return"]
    fine = ok_reply(case)
    crash = crash_reply("Check failed: planted")
    original = campaign.judging.classify(case, {**fine, "others": [crash]}).finding
    after_passes = campaign.judging.classify(case, {**fine, "others": [fine, fine, fine, crash]}).finding
    assert original.oracle == "pass-order" and after_passes.oracle == "mutation"
    assert after_passes.signature == original.signature and after_passes.extra["mutators"] == ["wrap_return"]
    plain = campaign.judging.classify(case, {**fine, "others": [fine, fine, crash]}).finding
    baseline = campaign.judging.classify(case, {**crash, "others": []}).finding
    assert plain.oracle == "mutation" and plain.signature == baseline.signature
