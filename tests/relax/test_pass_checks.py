"""Check-only pass sequences (`--pass-checks N`, issue 27): N more drawn sequences per case
whose passes run, each output checked for well-formedness, and which are never built; a
pass that raises or leaves an ill-formed module through one is the pass-order oracle's
finding, keyed as one a built sequence shows. Against real TVM 0.27 (and 0.19 for Relay)."""
import json
import subprocess
import sys

import pytest

from conftest import run_hirfuzz
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coordinator import Settings
from hirfuzz.campaign.followups import FollowUps
from hirfuzz.campaign.judge import Judge, Status
from hirfuzz.campaign.outcome import Outcome
from hirfuzz.campaign.oracles import ORACLE_FIELD, Oracle
from hirfuzz.core.passes import load_catalog, parse_sequence
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.protocol import CHECK_ONLY, encode_array
from hirfuzz.worker import execute_case

# case 0 of seed 1 on these settings lowers add, exp and multiply with a private function,
# on which FastMathTransform raises (TVM 0.27: "'GlobalVar' object has no attribute 'name'",
# its softmax check reads call.op.name of a call to a GlobalVar); its second check-only
# sequence holds FastMathTransform, and its built sequence passes
SMALL = dict(ops=3, seed=1, only_ops=["add", "exp", "multiply"], dtypes=["float32"], mutations=0)
SMALL_ARGS = ["--ops", 3, "--seed", 1, "--only-ops", "add,exp,multiply", "--dtypes", "float32", "--mutations", 0,
              "--jobs", 1, "--no-progress"]


def maker(dialect: str = "relax", **settings) -> CaseMaker:
    info = dialect_info(dialect)
    from hirfuzz.core.spec import load_specs
    return CaseMaker(Settings(dialect=dialect, **settings), load_specs(dialect=dialect), info,
                     load_catalog(builtin=info.catalog))


def test_check_only_sequences_come_last_from_a_stream_of_their_own():
    plain, checked = maker(**SMALL, pass_checks=0), maker(**SMALL, pass_checks=3)
    for index in range(3):
        before, after = plain.make_case(index), checked.make_case(index)
        # the graph, inputs and every configuration drawn before stay as they were
        assert after.graph.to_json() == before.graph.to_json() and after.lowering == before.lowering
        assert after.configs[:len(before.configs)] == before.configs
        extra = after.configs[len(before.configs):]
        assert len(extra) == 3 and all(c[CHECK_ONLY] and c["passes"] for c in extra)
        assert all(c[ORACLE_FIELD] == Oracle.PASS_ORDER.value for c in extra)
        assert not any(c.get(CHECK_ONLY) for c in before.configs)
    catalog = load_catalog(builtin=dialect_info("relax").catalog)
    pinned = maker(**SMALL, pass_checks=3, pass_seq=parse_sequence("FoldConstant", catalog)).make_case(0)
    assert not any(c.get(CHECK_ONLY) for c in pinned.configs)  # a pinned sequence is all a campaign runs


def test_a_follow_up_mutant_leaves_its_original_s_check_only_sequences_out():
    # nothing of theirs was built for the original, nor would be for the mutant: a follow-up
    # runs the original's baseline and built sequence, then the mutant's
    made = maker(**{**SMALL, "mutations": 0}, pass_checks=2, followups=1)
    case = made.make_case(0)
    case.new_coverage = 1
    reply = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected]}
    answer = {**reply, "others": [dict(reply) for _ in case.configs[1:]]}
    original = FollowUps(made).interesting(case, answer, Outcome(Status.OK))
    followup = FollowUps(made).followup(original, 0)
    assert followup.configs[:2] == case.configs[:2] and not any(c.get(CHECK_ONLY) for c in followup.configs)
    assert sorted(followup.given) == [0, 1]


def test_a_check_only_sequence_runs_its_passes_is_never_built_and_its_crash_is_a_pass_order_finding(specs):
    made = maker(**SMALL, pass_checks=2)
    case = made.make_case(0)
    assert [step["name"] for step in case.configs[-1]["passes"]].count("FastMathTransform") == 1
    reply = execute_case(case.request, load_dialect("relax"))
    *built, fine, crashed = [reply, *reply["others"]]
    assert all("build" in r["stages"] and r["status"] == "ok" for r in built)
    # the check-only sequence that passes: its passes ran, nothing was built, nothing to compare
    assert fine["status"] == "ok" and fine["outputs"] == [] and set(fine["stages"]) == {"passes"}
    assert (crashed["status"], crashed["stage"]) == ("error", "passes") and "build" not in crashed["stages"]
    finding = Judge(specs, {}).classify(case, reply).finding
    assert (finding.kind, finding.oracle, finding.stage) == ("crash", "pass-order", "passes")
    assert finding.signature == "pass-order|crash|passes|AttributeError||'GlobalVar' object has no attribute 'name'"
    assert finding.extra["config"] == case.configs[-1]
    # without the crashing one, the case is judged on its built configurations alone: its
    # passing check-only reply is neither compared nor a mismatch
    case.configs.pop()
    reply["others"].pop()
    outcome = Judge(specs, {}).classify(case, reply)
    assert outcome.status is Status.OK and outcome.finding is None


@pytest.mark.slow  # a campaign with a reduction and its reproducers checked: about a minute
def test_a_pass_crash_found_by_a_check_only_sequence_is_filed_reduced_and_reproduced_by_its_script(tmp_path):
    out = tmp_path / "out"
    proc = run_hirfuzz(*SMALL_ARGS, "--pass-checks", 2, "--iterations", 1, "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    (row,) = summary["findings"]
    assert row["signature"] == "pass-order|crash|passes|AttributeError||'GlobalVar' object has no attribute 'name'"
    assert summary["pass_checks"] == {**summary["pass_checks"], "per_case": 2, "run": 2, "findings": 1}
    folder = out / row["path"]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["config"][CHECK_ONLY]
    assert finding["extra"]["pass_names"] == ["FastMathTransform"]  # minimised
    # reduced with the baseline lowered only: a trial builds nothing the failure needs
    baseline = json.loads((folder / "case.json").read_text())["configs"][0]
    assert baseline["passes"] == [] and baseline[CHECK_ONLY]
    (record,) = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert [set(c) for c in record["config_timings"][-2:]] == [{"passes"}, set()]  # never built
    script = (folder / "repro.py").read_text()
    assert "relax.build" not in script  # a check-only sequence's failure needs no build
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(script)
    ran = subprocess.run([sys.executable, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=300)
    assert ran.returncode != 0 and "'GlobalVar' object has no attribute 'name'" in ran.stderr, ran.stderr[-2000:]
    assert "check-only pass sequences (not built): 2 run" in (out / "report.md").read_text()
