"""Check-only cases (`--check-cases K`, issue 27): after each built case, K cases whose
graphs are lowered, checked well-formed and run through their pass sequences, each output
checked, and never built. Against real TVM 0.27."""
import json
import subprocess
import sys

import pytest

from conftest import run_hirfuzz
from hirfuzz.campaign.judge import Judge, Status
from hirfuzz.campaign.oracles import ORACLE_FIELD, Oracle
from hirfuzz.dialects import load_dialect
from hirfuzz.protocol import CHECK_ONLY, lowered_only
from hirfuzz.worker import execute_case
from test_pass_checks import SMALL, SMALL_ARGS, maker


def test_the_k_cases_after_each_built_one_are_check_only_and_draw_what_a_built_case_draws():
    plain, checking = maker(**SMALL, pass_checks=2), maker(**SMALL, pass_checks=2, check_cases=2)
    for index in range(6):
        before, after = plain.make_case(index), checking.make_case(index)
        # the graph, inputs and lowering are the seed's, whichever kind the case is
        assert after.graph.to_json() == before.graph.to_json() and after.lowering == before.lowering
        assert after.request["inputs"] == before.request["inputs"]
        if index % 3 == 0:
            assert after.configs == before.configs and not checking.check_only(index)
            continue
        # its baseline lowered only; the built case's pass sequences, and its own check-only
        # ones, only checked; no other executor, target or mutant
        assert after.configs[0] == lowered_only(before.configs[0])
        sequences = [c for c in before.configs if c.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value]
        assert after.configs[1:] == [{**c, CHECK_ONLY: True} for c in sequences]
        assert all(c[CHECK_ONLY] for c in after.configs)


def test_check_only_cases_draw_their_own_number_of_operators():
    # --check-ops: a built case's graph has --ops operators, a check-only case's --check-ops
    made = maker(**{**SMALL, "ops": 6}, check_cases=2, check_ops=2)
    sizes = {index: len(made.make_case(index).graph.operators) for index in range(6)}
    assert [sizes[i] for i in (0, 3)] == [6, 6] and [sizes[i] for i in (1, 2, 4, 5)] == [2, 2, 2, 2]
    # without it, as many as a built case
    same = maker(**{**SMALL, "ops": 6}, check_cases=2)
    assert all(len(same.make_case(i).graph.operators) == 6 for i in range(3))


def test_no_check_only_case_where_a_campaign_asks_about_results():
    from hirfuzz.core.passes import load_catalog, parse_sequence
    from hirfuzz.dialects import dialect_info
    catalog = load_catalog(builtin=dialect_info("relax").catalog)
    asked = [dict(pass_seq=parse_sequence("FoldConstant", catalog)), dict(pass_fuzz=False),
             dict(mode="disruptive"), dict(cross_dialect="relay")]
    for settings in asked:
        made = maker(**{**SMALL, "check_cases": 2, **settings})
        assert not any(made.check_only(index) for index in range(6)), settings


def test_a_check_only_case_builds_nothing_and_a_pass_crash_in_it_is_the_pass_order_oracle_s(specs):
    made = maker(**SMALL, pass_checks=2, check_cases=1)
    case = made.make_case(1)
    reply = execute_case(case.request, load_dialect("relax"))
    replies = [reply, *reply["others"]]
    assert all(r["status"] == "ok" and r["outputs"] == [] for r in replies)
    assert all("build" not in r["stages"] and "load" not in r["stages"] for r in replies)
    outcome = Judge(specs, {}).classify(case, reply)
    assert (outcome.status, outcome.finding) == (Status.CHECKED, None)
    # case 0's graph (it has a private function) under its check-only sequence that holds
    # FastMathTransform, which raises on TVM 0.27: keyed as when a built case shows it
    first = made.make_case(0)
    crashing = first.configs[-1]
    assert any(step["name"] == "FastMathTransform" for step in crashing["passes"])
    again = made.make_case(1, graph=first.graph, lowering=first.lowering,
                           configs=[lowered_only(first.configs[0]), crashing])
    reply = execute_case(again.request, load_dialect("relax"))
    outcome = Judge(specs, {}).classify(again, reply)
    assert outcome.status is Status.CHECKED
    assert outcome.finding.signature == "pass-order|crash|passes|AttributeError||'GlobalVar' object has no attribute 'name'"
    assert outcome.finding.extra["config"] == crashing


@pytest.mark.slow  # a campaign with a reduction and its reproducer checked: about half a minute
def test_a_pass_crash_in_a_check_only_case_is_filed_reduced_without_a_build_and_reproduced(tmp_path):
    # case 2 of seed 1 on these settings is check-only; ToMixedPrecision raises on its
    # private function ("Expected TensorType, but got R.Callable", TVM 0.27's to_mixed_precision.cc)
    out = tmp_path / "out"
    proc = run_hirfuzz(*SMALL_ARGS, "--pass-checks", 2, "--check-cases", 2, "--iterations", 3, "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["cases"], summary["built"], summary["checked_only"]) == (3, 1, 2)
    records = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["ok", "checked", "checked"]
    assert all(set(timing) <= {"passes"} for r in records[1:] for timing in r["config_timings"])
    (row,) = [r for r in summary["findings"] if "ToMixedPrecision" in r["message"]]
    folder = out / row["path"]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["confirmed"] and finding["case"] == 2 and finding["extra"]["pass_names"] == ["ToMixedPrecision"]
    # reduced and saved with its baseline lowered only: no trial built anything
    baseline, failing = json.loads((folder / "case.json").read_text())["configs"]
    assert baseline == {**baseline, "passes": [], CHECK_ONLY: True} and failing[CHECK_ONLY]
    script = (folder / "repro.py").read_text()
    assert "relax.build" not in script
    ran = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert ran.returncode != 0 and "Expected TensorType, but got R.Callable" in ran.stderr, ran.stderr[-2000:]
    assert "2 check-only, never built" in (out / "report.md").read_text()
