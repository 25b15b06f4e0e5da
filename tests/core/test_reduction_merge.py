"""A finding whose signature changes while it is isolated is still one finding per bug, and
no step of a reduction takes a failure other than the finding's (campaign machinery only:
no TVM; where a worker is needed, one whose answers the test scripts)."""
import json
import threading

import pytest

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.oracles import ORACLE_FIELD, Oracle
from hirfuzz.campaign.reducer import Job, Reduction, same_signature
from hirfuzz.campaign.reduction_steps import REDUCING, Finishing, StandIn
from hirfuzz.core.finding import Finding
from hirfuzz.core.spec import load_specs
from hirfuzz.protocol import CHECK_ONLY, encode_array, lowered_only

CRASH = "crash|build|InternalError||Check failed: (!virtual_device->IsFullyUnconstrained())"


def crash(oracle: str) -> Finding:
    return Finding(kind="crash", oracle=oracle, stage="build", signature=f"{oracle}|{CRASH}", message="m", case=0)


def test_a_pass_order_crash_that_fails_without_passes_joins_the_executor_finding(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    known = crash("executor")
    known.path = str(tmp_path / "out" / "findings" / "0001-crash")
    (tmp_path / "out" / "findings" / "0001-crash").mkdir(parents=True)
    campaign.tables.findings[known.signature] = known
    # what fails_without_passes leaves: a pass-order finding, re-keyed as the executor's
    finding = crash("pass-order")
    job = Job("findings", None, finding, "", "key", finding.signature)
    finding.oracle, finding.signature = "executor", known.signature
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    assert reduction.merged_into_known(job, passes=[])
    assert known.hits == 2 and list(campaign.tables.findings) == [known.signature]
    # later hits of the pass-order signature count for the executor finding too
    campaign.tables.record(None, crash("pass-order"), "")
    assert known.hits == 3 and not campaign.reductions.pending
    campaign.tables.write_hits()  # as the next checkpoint does
    assert '"hits": 3' in (tmp_path / "out" / "findings" / "0001-crash" / "finding.json").read_text()


def test_an_unchanged_signature_is_finished_as_its_own_finding(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    finding = crash("executor")
    job = Job("findings", None, finding, "", "key", finding.signature)
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    assert not reduction.merged_into_known(job, passes=[])


# --- a reduction keeps the finding's failure --------------------------------------------------

DEATH = "crash|worker|SIGABRT"
MIXED = "crash|passes|InternalError||Check failed: (tensor) is false: Expected TensorType"


@pytest.mark.parametrize("found,signature,oracle_may_change,same", [
    (f"pass-order|{CRASH}", f"pass-order|{CRASH}", False, True),
    (f"pass-order|{CRASH}x", f"pass-order|{CRASH}", False, False),           # another message
    (f"executor|{CRASH}", f"pass-order|{CRASH}", False, False),              # another oracle...
    (f"executor|{CRASH}", f"pass-order|{CRASH}", True, True),                # ...where it may change
    (CRASH.replace("InternalError", "TVMError"), CRASH, False, False),       # another exception
    # the issue's: a ToMixedPrecision crash whose trial without passes died out of memory
    (DEATH, f"pass-order|{MIXED}", True, False),
    (DEATH, "crash|worker|SIGSEGV", False, False),
    ("wrong-result|pass-order|vm:llvm|FoldConstant", "wrong-result|pass-order|vm:llvm|FoldConstant,Normalize",
     False, True),                                                           # a wrong result: kind and oracle
    ("wrong-result|executor|vm:llvm|add:float32", "wrong-result|pass-order|vm:llvm|FoldConstant", False, False),
    ("wrong-result|executor|vm:llvm|add:float32", "wrong-result|pass-order|vm:llvm|FoldConstant", True, True),
    (f"pass-order|{CRASH}", "wrong-result|pass-order|vm:llvm|FoldConstant", True, False),
    # Relay's diagnostics are joined by " | ": a message with "|" in it is one part
    ("crash|build|DiagnosticError||a | b", "crash|build|DiagnosticError||a | b", False, True),
    ("crash|build|DiagnosticError||a | c", "crash|build|DiagnosticError||a | b", False, False),
])
def test_a_step_is_the_same_failure_only_where_its_signature_is(found, signature, oracle_may_change, same):
    assert same_signature(found, signature, oracle_may_change) is same


class ScriptedWorker:
    """Stands in for a lent worker: answers each run as `answer(request, runs)` says (`runs`:
    how often that very request ran before), so a test chooses TVM's failures."""

    def __init__(self, answer):
        self.answer = answer
        self.runs: dict[str, int] = {}

    def run_one(self, request, timeout_s):
        key = json.dumps(request, sort_keys=True)
        self.runs[key] = self.runs.get(key, 0) + 1
        return self.answer(request, self.runs[key] - 1)


def crash_reply(message: str) -> dict:
    return {"status": "error", "stage": "build", "exc_type": "InternalError", "message": message,
            "traceback": ""}


def reduction_of(tmp_path, answer):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0, ops=12, pass_fuzz=False, features=False,
                                 mutations=0), load_specs(), progress=False)
    host = campaign.reductions.host
    return host, Reduction(host, ScriptedWorker(answer), threading.Event(), campaign.reductions.pending)


def test_a_reduced_program_that_fails_otherwise_when_run_again_keeps_the_finding_unreduced(tmp_path):
    # every program fails alike the first time it runs, and otherwise after: the reduced
    # program, run once more, is seen to fail otherwise (a failure that comes and goes)
    host, reduction = reduction_of(tmp_path, lambda request, runs: crash_reply(
        "Check failed: a is false" if runs == 0 else "Check failed: b is false"))
    case = host.make_case(0)
    finding = host.classify(case, crash_reply("Check failed: a is false")).finding
    signature = finding.signature
    kept = reduction.reduced(case, finding)
    assert kept is case and len(case.graph.operators) == 12
    assert finding.signature == signature and "Check failed: a" in finding.message
    assert "failed otherwise: InternalError: Check failed: b" in finding.extra["reduction"]["kept_unreduced"]
    assert finding.extra["reduction"]["checks"] > 0  # it did shrink, step by step, before


def test_a_reduced_program_that_fails_alike_again_is_kept(tmp_path):
    host, reduction = reduction_of(tmp_path, lambda request, runs: crash_reply("Check failed: a is false"))
    case = host.make_case(0)
    finding = host.classify(case, crash_reply("Check failed: a is false")).finding
    reduced = reduction.reduced(case, finding)
    assert len(reduced.graph.operators) == 1 and "kept_unreduced" not in finding.extra["reduction"]


@pytest.mark.parametrize("flaky", [False, True])
def test_each_reduction_step_counts_the_trials_it_ran_and_those_it_took(tmp_path, flaky):
    """Every worker trial is one step's call; a trial that failed alike was taken, a
    success. Flaky: each program fails alike the first time only, so the reduced program,
    run once more to confirm it, fails otherwise, and is not taken."""
    host, reduction = reduction_of(tmp_path, lambda request, runs: crash_reply(
        "Check failed: b is false" if flaky and runs else "Check failed: a is false"))
    case = host.make_case(0)
    finding = host.classify(case, crash_reply("Check failed: a is false")).finding
    state = Finishing(finding, case)
    reduction.run_steps(REDUCING, state)
    stats = state.stats
    # no lowering plan, no mutant: nothing else to try but the reduced operator's attributes
    assert list(stats) in (["reduce_graph", "confirm"], ["reduce_graph", "simplify_attributes", "confirm"])
    assert sum(s.calls for s in stats.values()) == sum(reduction.worker.runs.values()) > 1
    graph = stats["reduce_graph"]
    assert graph.calls == finding.extra["reduction"]["checks"] and graph.successes == graph.calls
    assert (stats["confirm"].calls, stats["confirm"].successes) == (1, 0 if flaky else 1)
    assert (state.case is case) is flaky
    assert all(s.seconds > 0 for s in stats.values())


@pytest.mark.parametrize("without_passes,executors", [
    ("Check failed: IsFullyUnconstrained", False),
    ("type inference failed", True),  # the same failure with no pass: the executor's
])
def test_a_configuration_without_passes_takes_the_finding_only_where_it_fails_alike(tmp_path, without_passes,
                                                                                     executors):
    """The issue's Relay case: DynamicToStatic's type inference failure; the configuration
    without the pass failed otherwise (a VM check), which was taken for the same failure
    (their kinds alone were compared), and the finding became that other crash."""
    host, reduction = reduction_of(tmp_path, None)
    case = host.make_case(0)
    baseline = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected]}  # NumPy's results

    def answer(request, runs):
        said = "type inference failed" if request["configs"][1]["passes"] else without_passes
        return {**baseline, "others": [crash_reply(said)]}
    reduction.worker.answer = answer
    config = {**case.configs[0], "passes": [{"name": "DynamicToStatic", "args": {}}],
              ORACLE_FIELD: Oracle.PASS_ORDER.value}
    case = reduction.variant(case, configs=[case.configs[0], config])
    finding = host.classify(case, answer(case.request, 0)).finding
    assert finding.oracle == "pass-order" and "type inference failed" in finding.message
    first = finding.signature
    assert reduction.fails_without_passes(case, finding, config) is executors
    assert "type inference failed" in finding.message
    if executors:
        assert finding.oracle == "executor" and finding.signature == first.replace("pass-order|", "executor|", 1)
    else:
        assert finding.signature == first and finding.oracle == "pass-order"


@pytest.mark.parametrize("stand_in_says,kept", [
    ("Check failed: a is false", True),
    ("Check failed: b is false", False),  # the stand-ins fail, but otherwise: another failure
])
def test_a_pass_is_replaced_by_its_stand_in_only_where_the_finding_fails_alike(tmp_path, stand_in_says, kept):
    """reduction_steps.StandIn: ReorderTakeAfterMatmul's failure, with the passes it runs
    inside itself in its place. Each trial is judged as the finding was: a substitution
    that changes the failure is not kept."""
    host, reduction = reduction_of(tmp_path, None)
    case = host.make_case(0)

    def answer(request, runs):
        names = [step["name"] for step in request["configs"][-1]["passes"]]
        said = "Check failed: a is false" if "ReorderTakeAfterMatmul" in names else stand_in_says
        return {"status": "ok", "others": [{**crash_reply(said), "stage": "passes"}]}
    reduction.worker.answer = answer
    steps = [{"name": "ReorderTakeAfterMatmul", "args": {}}]
    config = {**case.configs[0], "passes": steps, ORACLE_FIELD: Oracle.PASS_ORDER.value, CHECK_ONLY: True}
    case = reduction.variant(case, configs=[lowered_only(case.configs[0]), config])
    finding = host.classify(case, answer(case.request, 0)).finding
    signature = finding.signature
    assert finding.oracle == "pass-order"
    state = Finishing(finding, case)
    reduction.run_steps([StandIn()], state)
    names = [step["name"] for step in state.case.configs[-1]["passes"]]
    # CanonicalizeBindings and EliminateCommonSubexpr (runs_inside_it), then the catalog's
    # stand-ins (CanonicalizeBindings again: tried once)
    assert names == (["CanonicalizeBindings"] if kept else ["ReorderTakeAfterMatmul"])
    assert (state.stats["stand_in"].calls, state.stats["stand_in"].successes) == ((1, 1) if kept else (2, 0))
    assert finding.signature == signature and ("Check failed: a" in finding.message)
    assert (state.case is case) is not kept


def test_two_frameless_pass_crashes_that_one_stand_in_reproduces_key_alike_once_it_stands_in(tmp_path):
    """A crash in a pass that no TVM frame places is keyed on the pass that raised, as the
    worker said (core.finding.root_key): seen after two pattern-rewrite passes that run
    CanonicalizeBindings inside themselves, whose failure it is, it keys on each of them
    before the stand_in step, and on CanonicalizeBindings, once, after it."""
    host, reduction = reduction_of(tmp_path, None)
    carriers = ("ReorderTakeAfterMatmul", "RemoveRedundantReshape", "CanonicalizeBindings")

    def answer(request, runs):
        names = [step["name"] for step in request["configs"][-1]["passes"]]
        if not any(name in carriers for name in names):
            return {"status": "ok", "others": [{"status": "ok"}]}
        # the worker says which pass of the sequence raised (protocol: "failed_pass")
        raised_in = next(name for name in names if name in carriers)
        return {"status": "ok", "others": [{**crash_reply("Check failed: (x) is false"), "stage": "passes",
                                            "failed_pass": raised_in}]}
    reduction.worker.answer = answer

    def keys(name: str) -> tuple[str, str]:
        case = host.make_case(0)
        config = {**case.configs[0], "passes": [{"name": name, "args": {}}], ORACLE_FIELD: Oracle.PASS_ORDER.value,
                  CHECK_ONLY: True}
        case = reduction.variant(case, configs=[lowered_only(case.configs[0]), config])
        finding = host.classify(case, answer(case.request, 0)).finding
        job = Job("findings", case, finding, "", "key", finding.signature)
        state = Finishing(finding, case)
        before = reduction.root_key_of(job, state)
        reduction.run_steps([StandIn()], state)
        return before, reduction.root_key_of(job, state)

    (take_before, take_after), (reshape_before, reshape_after) = keys("ReorderTakeAfterMatmul"), keys(
        "RemoveRedundantReshape")
    assert take_before == "root|crash|InternalError|pass:ReorderTakeAfterMatmul|Check failed: (x)"
    assert reshape_before == "root|crash|InternalError|pass:RemoveRedundantReshape|Check failed: (x)"
    assert take_after == reshape_after == "root|crash|InternalError|pass:CanonicalizeBindings|Check failed: (x)"
