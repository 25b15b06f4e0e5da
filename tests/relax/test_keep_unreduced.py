"""A finding whose reduced program failed on the worker that reduced it, but whose scripts
pass alone, is filed with the program reduction started from where that one's scripts fail
alone (Reduction.verify_unreduced). bench29 relay seed 23 unconfirmed/0001: a max_pool2d
gradient that reads past a buffer, reduced on the worker to one differing element of 120
and passing alone, filed as unconfirmed although its first program reproduced.

The worker's part (a reduced program failing there) is stated, since what a process's
memory holds cannot be chosen; every script runs alone on real TVM 0.27, as a campaign's
verify step runs it."""
import copy
import threading
from types import SimpleNamespace

from graph_json import graph_of, op, var

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.oracles import ORACLES, Oracle
from hirfuzz.campaign.reducer import Job, Reduction
from hirfuzz.campaign.reduction_steps import Finishing
from hirfuzz.campaign.reproducers import HARNESS, REPRO
from hirfuzz.campaign.verify import check_finding_scripts
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import execute_case

# sum(cumsum(x0, exclusive=True)) + sum(sin(x2)): TVM's exclusive cumsum gradient is the
# inclusive one's (tools/gradient_bugs.py), so this program's scripts fail alone; sin's
# gradient is right, so a program of sin alone passes alone
CUMSUM_AND_SIN = graph_of(var(0, [3]), op(1, "cumsum", [[0, 0]], [3], {"axis": 0, "exclusive": True}),
                          var(2, [2, 4]), op(3, "sin", [[2, 0]], [2, 4]))
SIN = graph_of(var(0, [2, 4]), op(1, "sin", [[0, 0]], [2, 4]))
SIN_AND_TANH = graph_of(var(0, [2, 4]), op(1, "sin", [[0, 0]], [2, 4]), var(2, [3]), op(3, "tanh", [[2, 0]], [3]))


def finishing(specs, tmp_path, unreduced_graph, reduced_graph):
    """A reduction on a host whose scripts run alone here, and a gradient finding of
    CUMSUM_AND_SIN as its worker reported it, its program reduced to `reduced_graph` from
    `unreduced_graph` (the case as generated, its configuration isolated)."""
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0, mutations=0, gradients=0.1), specs,
                        progress=False)
    host = campaign.reductions.host
    config = ORACLES[Oracle.GRADIENT].config(campaign.maker)
    seen = host.make_case(0, CUMSUM_AND_SIN, configs=[config], lowering={})
    finding = host.classify(seen, execute_case(seen.request, load_dialect("relax"))).finding
    assert finding is not None and "x0's gradient differs" in finding.message, finding
    worker = SimpleNamespace(check_scripts=lambda folder, found, limit: check_finding_scripts(folder, found, limit))
    reduction = Reduction(host, worker, threading.Event(), campaign.reductions.pending)
    unreduced = host.make_case(0, unreduced_graph, configs=[config], lowering={})
    job = Job("findings", unreduced, finding, "", "k", finding.signature)
    first = copy.deepcopy(finding)
    state = Finishing(finding, host.make_case(0, reduced_graph, configs=[config], lowering={}))
    state.reduced_signature = finding.signature  # Confirm: the worker saw the reduced program fail alike
    finding.message = "the reduced program's message on the worker"
    return reduction, job, state, first


def test_a_reduced_program_that_passes_alone_is_filed_unreduced_where_that_reproduces(specs, tmp_path):
    reduction, job, state, first = finishing(specs, tmp_path, CUMSUM_AND_SIN, SIN)
    finding, unreduced = state.finding, copy.deepcopy(first)
    files = reduction.describe(job, state, first, job.case)
    assert "cumsum" not in files[REPRO] and HARNESS not in files  # a gradient finding has one script
    folder, outcome, files = reduction.verify_finished(job, state, first, job.case, unreduced, files)
    assert (folder, outcome.reproduced, finding.confirmed) == ("findings", True, True)
    assert state.case is job.case and "cumsum" in files[REPRO]
    assert finding.message == first.message and "unconfirmed_reason" not in finding.extra
    kept = finding.extra["reduction"]["kept_unreduced"]
    assert "reduced program's scripts (1 operators) did not fail alike (HIRFUZZ-REPRO ok)" in kept
    assert finding.extra["ops"] == 2 and "root_key" not in finding.extra  # a wrong result keyed on no reduced run


def test_where_the_unreduced_program_passes_alone_too_the_reduced_filing_stays_unconfirmed(specs, tmp_path):
    reduction, job, state, first = finishing(specs, tmp_path, SIN_AND_TANH, SIN)
    finding, reduced = state.finding, state.case
    files = reduction.describe(job, state, first, job.case)
    folder, outcome, files = reduction.verify_finished(job, state, first, job.case, copy.deepcopy(first), files)
    assert (folder, outcome.reproduced, finding.confirmed) == ("unconfirmed", False, False)
    assert state.case is reduced and "tanh" not in files[REPRO]
    assert finding.message.startswith("the reduced program's message")
    assert finding.extra["unconfirmed_reason"] == ("the reproducer alone did not fail alike (HIRFUZZ-REPRO ok); "
                                                   "nor did its unreduced program's (HIRFUZZ-REPRO ok)")
    assert "kept_unreduced" not in finding.extra.get("reduction", {})
