"""Pass-order fuzzing on Relay: small faulty passes, written here, are found by short campaigns
given only their catalog entry, each with the minimal pass sequence in its finding."""
import json

from conftest import ROOT
from test_relay_campaign import relay_campaign

PLANTED = ROOT / "tests" / "relay" / "planted" / "planted.yaml"
OPS = ["--only-ops", "add,subtract,multiply,exp,abs,sum,negative,tanh", "--dtypes", "float32"]


def planted_campaign(tmp_path, seq, n=4, seed=0, ops=8):
    out = tmp_path / "out"
    proc = relay_campaign("--passes", PLANTED, "--pass-seq", seq, "--iterations", n, "--ops", ops, "--out", out,
                          "--seed", seed, "--jobs", 2, *OPS)
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def test_planted_constant_change_is_found_with_minimal_sequence(tmp_path):
    s = planted_campaign(tmp_path, "FoldConstant,PlantedChangeConstant,SimplifyExpr")
    wrong = [f for f in s["findings"] if f["kind"] == "wrong-result"]
    assert len(wrong) == 1, s["findings"]  # one bug, however many results show it
    assert wrong[0]["oracle"] == "pass-order"
    assert wrong[0]["message"].startswith("after PlantedChangeConstant():"), wrong[0]["message"]
    assert s["unconfirmed"] == []  # its reproducer fails alone, importing the user's pass


def test_planted_operand_swap_is_found_with_minimal_sequence(tmp_path):
    s = planted_campaign(tmp_path, "SimplifyExpr,PlantedSwapOperands,DeadCodeElimination", n=6)
    wrong = [f for f in s["findings"] if f["kind"] == "wrong-result"]
    assert wrong, s
    assert all(f["oracle"] == "pass-order" and f["message"].startswith("after PlantedSwapOperands():")
               for f in wrong), [f["message"] for f in wrong]
    assert s["unconfirmed"] == []


def test_planted_raise_on_a_closure_is_a_crash_naming_the_pass(tmp_path):
    # closures come from the lowering plans, which put some subgraphs in let-bound functions
    s = planted_campaign(tmp_path, "InferType,PlantedRaiseOnClosure", n=8, seed=3)
    crashes = [f for f in s["findings"] if f["kind"] == "crash"]
    assert crashes and crashes[0]["oracle"] == "pass-order" and crashes[0]["stage"] == "passes"
    assert crashes[0]["message"].startswith("after PlantedRaiseOnClosure():"), crashes[0]["message"]
    assert s["unconfirmed"] == []
