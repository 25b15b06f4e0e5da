"""Every pass in the catalog gets fuzzed (issue 14 item 4): passes that may change results
on purpose (`preserves_results: false`) are drawn, and their configurations are judged by
the crash and well-formedness oracles, and numerically only within the approximation their
catalog entry documents, never exactly; against real TVM 0.27 builds and runs."""
import json

import pytest

from conftest import ROOT, run_hirfuzz
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coordinator import Settings
from hirfuzz.campaign.judge import Judge, Status
from hirfuzz.core.oracle import Approximation, compare_results, judged_facts
from hirfuzz.core.passes import load_catalog, parse_sequence
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.protocol import decode_array
from hirfuzz.worker import execute_case

PLANTED = ROOT / "tests" / "relax" / "planted" / "planted_approx.yaml"
# --versions none: no version triage under the other Relax releases a machine may have set up
SMALL = ["--only-ops", "add,multiply,exp,abs,subtract,sum,matmul", "--no-progress", "--jobs", "1", "--ops", 6,
         "--versions", "none"]


def campaign(tmp_path, seq: str, n: int, seed: int = 0) -> dict:
    out = tmp_path / "out"
    proc = run_hirfuzz("--passes", PLANTED, "--pass-seq", seq, "--iterations", n, "--out", out, "--seed", seed,
                       *SMALL)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def test_real_mixed_precision_is_judged_within_float16_never_exactly(specs):
    # matmul takes float16 inputs under ToMixedPrecision and the ops after it compute in
    # float16: every case's results differ from the float32 reference beyond its own
    # tolerance, and each is judged fine, compared within the documented approximation
    info = dialect_info("relax")
    catalog = load_catalog(builtin=info.catalog)
    settings = Settings(ops=6, seed=3, only_ops=["matmul", "add", "exp", "maximum"], dtypes=["float32"],
                        features=False, mutations=0, pass_seq=parse_sequence("ToMixedPrecision", catalog))
    maker, dialect, judge = CaseMaker(settings, specs, info, catalog), load_dialect("relax"), Judge(specs, {})
    for index in range(4):
        case = maker.make_case(index)
        approximation = Approximation.of_passes(case.configs[1]["passes"])
        assert approximation == Approximation(True, 0.05, 0.01, 65504.0)
        reply = execute_case(case.request, dialect)
        (mixed,) = reply["others"]
        outputs = [decode_array(a) for a in mixed["outputs"]]
        assert compare_results(case.expected, outputs), "ToMixedPrecision changed nothing: the test shows nothing"
        assert any(f.stable for f in judged_facts(case.expected, approximation))  # something is compared
        outcome = judge.classify(case, reply)
        assert outcome.status is Status.OK and outcome.finding is None, outcome.finding


@pytest.mark.slow  # four ToMixedPrecision builds and a planted campaign; the unit tests above guard the approximation
def test_a_non_preserving_pass_within_its_approximation_raises_no_alarm_and_the_same_pass_claiming_exactness_does(
        tmp_path):
    # one pass, moving float constants by a relative 1e-4: documented as an approximation it is
    # fine, declared as preserving results it is a wrong result
    s = campaign(tmp_path, "PlantedRoundConstants", n=6)
    assert s["findings"] == [] and s["unconfirmed"] == [] and s["compared_fully"] > 0, s
    exact = tmp_path / "exact.yaml"
    exact.write_text('passes:\n  - {name: PlantedRoundClaimingExact, import: "planted_passes:round_constants"}\n')
    out = tmp_path / "exact-out"
    proc = run_hirfuzz("--passes", exact, "--pass-seq", "PlantedRoundClaimingExact", "--iterations", 6, "--out", out,
                       *SMALL, env={"PYTHONPATH": str(PLANTED.parent)})
    assert proc.returncode == 0, proc.stderr
    found = json.loads((out / "summary.json").read_text())["findings"]
    assert [(f["kind"], f["oracle"]) for f in found] == [("wrong-result", "pass-order")], found


def test_a_crash_in_a_non_preserving_pass_is_found_and_confirmed(tmp_path):
    s = campaign(tmp_path, "PlantedRoundRaiseOnExp", n=4)
    (f,) = s["findings"]
    assert (f["kind"], f["oracle"], f["stage"]) == ("crash", "pass-order", "passes"), f
    assert f["message"].startswith("after PlantedRoundRaiseOnExp():") and "cannot approximate exp" in f["message"]
    assert s["unconfirmed"] == []


def test_an_ill_formed_output_of_a_non_preserving_pass_is_found_and_blamed_on_it(tmp_path):
    s = campaign(tmp_path, "PlantedRoundUndefineVar", n=3)
    (f,) = s["findings"]
    assert (f["kind"], f["oracle"], f["stage"]) == ("crash", "pass-order", "ill_formed_after_pass"), f
    assert f["signature"] == "pass-order|ill-formed|PlantedRoundUndefineVar|Var ? is not defined."
    assert s["unconfirmed"] == []
