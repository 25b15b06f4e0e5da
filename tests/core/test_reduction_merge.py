"""A finding whose signature changes while it is isolated is still one finding per bug
(campaign machinery only: no worker, no TVM)."""
import threading

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.reducer import Job, Reduction
from hirfuzz.core.finding import Finding
from hirfuzz.core.spec import load_specs

CRASH = "crash|build|InternalError||Check failed: (!virtual_device->IsFullyUnconstrained())"


def crash(oracle: str) -> Finding:
    return Finding(kind="crash", oracle=oracle, stage="build", signature=f"{oracle}|{CRASH}", message="m", case=0)


def test_a_pass_order_crash_that_fails_without_passes_joins_the_executor_finding(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    known = crash("executor")
    known.path = str(tmp_path / "out" / "findings" / "0001-crash")
    (tmp_path / "out" / "findings" / "0001-crash").mkdir(parents=True)
    campaign.findings[known.signature] = known
    # what fails_without_passes leaves: a pass-order finding, re-keyed as the executor's
    finding = crash("pass-order")
    job = Job("findings", None, finding, "", "key", finding.signature)
    finding.oracle, finding.signature = "executor", known.signature
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    assert reduction.merged_into_known(job, passes=[])
    assert known.hits == 2 and list(campaign.findings) == [known.signature]
    # later hits of the pass-order signature count for the executor finding too
    campaign.record(None, crash("pass-order"), "")
    assert known.hits == 3 and not campaign.reductions.pending
    assert '"hits": 3' in (tmp_path / "out" / "findings" / "0001-crash" / "finding.json").read_text()


def test_an_unchanged_signature_is_finished_as_its_own_finding(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    finding = crash("executor")
    job = Job("findings", None, finding, "", "key", finding.signature)
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    assert not reduction.merged_into_known(job, passes=[])
