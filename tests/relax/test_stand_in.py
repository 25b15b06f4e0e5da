"""The stand_in reduction step against real TVM (0.27): a pass of a finding's sequence that
only carried CanonicalizeBindings' fault there is replaced by CanonicalizeBindings, and the
finding still fails alike. The programs are two findings of bench17/relax-after, as
hirfuzz reduced them (tests/relax/data/stand_in_cases.json: graph, lowering plan and
configurations), run through a Relax worker in this process."""
import json
import threading

import pytest

from conftest import ROOT
from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.reducer import Reduction
from hirfuzz.campaign.reduction_steps import ISOLATING, Finishing, StandIn
from hirfuzz.core.graph import Graph
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import execute_case

CASES = json.loads((ROOT / "tests" / "relax" / "data" / "stand_in_cases.json").read_text())


class InProcessWorker:
    """A lent worker's run_one, in this process (these programs raise; none kills it)."""

    def __init__(self):
        self.dialect = load_dialect("relax")

    def run_one(self, request, timeout_s):
        return execute_case(request, self.dialect)


def isolated(specs, tmp_path, name: str):
    """The saved reduced case, the finding its run makes, and a reduction on a worker here."""
    saved = CASES[name]
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), specs, progress=False)
    host = campaign.reductions.host
    case = host.make_case(0, Graph.from_json(saved["graph"]), configs=saved["configs"], lowering=saved["lowering"])
    reduction = Reduction(host, InProcessWorker(), threading.Event(), campaign.reductions.pending)
    finding = reduction.finding_of(case)
    assert finding is not None and finding.signature == saved["signature"], finding
    return case, finding, reduction


def test_the_pass_that_carried_the_fault_is_replaced_by_canonicalize_bindings_and_the_finding_fails_alike(
        specs, tmp_path):
    """Finding 0003: VM codegen fails after ReorderTakeAfterMatmul, which ran
    CanonicalizeBindings inside itself; CanonicalizeBindings alone fails alike, and the
    finding's sequence becomes it (the isolating steps, as a campaign runs them)."""
    case, finding, reduction = isolated(specs, tmp_path, "codegen_after_reorder_take")
    assert [step["name"] for step in case.configs[-1]["passes"]] == ["ReorderTakeAfterMatmul"]
    state = Finishing(finding, case)
    reduction.run_steps(ISOLATING, state)
    assert [step["name"] for step in state.case.configs[-1]["passes"]] == ["CanonicalizeBindings"]
    assert state.stats["stand_in"].successes == 1
    # the reduced case, run once more, fails with the finding's own signature
    again = reduction.finding_of(state.case)
    assert again.signature == finding.signature == CASES["codegen_after_reorder_take"]["signature"]
    assert state.case.configs[0] == case.configs[0]  # the baseline it is judged against stays


def test_an_ill_formed_output_is_blamed_on_the_stand_in_and_keeps_its_innermost_pass(specs, tmp_path):
    """Finding 0008: ReorderPermuteDimsAfterConcat's output is ill-formed because of the
    CanonicalizeTIRVariables inside the CanonicalizeBindings it runs inside itself. With
    CanonicalizeBindings in its place the signature (keyed on the innermost pass) is the same;
    the blamed pass the finding reports is the sequence's now. LegalizeOps, which nothing
    stands in for alike, stays."""
    case, finding, reduction = isolated(specs, tmp_path, "call_tir_after_reorder_permute_dims")
    assert finding.extra["blamed_pass"] == "ReorderPermuteDimsAfterConcat"
    state = Finishing(finding, case)
    reduced = StandIn().run(reduction, state)
    assert [step["name"] for step in reduced.configs[-1]["passes"]] == ["LegalizeOps", "CanonicalizeBindings"]
    assert finding.signature == CASES["call_tir_after_reorder_permute_dims"]["signature"]
    assert finding.extra["blamed_pass"] == "CanonicalizeBindings"
    assert finding.extra["inner_passes"] == ["CanonicalizeTIRVariables"]
    assert finding.extra["innermost_pass"] == "CanonicalizeTIRVariables"
    assert finding.message.startswith("CanonicalizeTIRVariables (inside CanonicalizeBindings) left an ill-formed")
    assert reduced.configs[-1]["check_only"] is True
