"""Is a failure the target's own? A confirmed crash on a target other than llvm, at build or
at run time, is retried on llvm under each of llvm's pipelines (DialectInfo.llvm_pipelines:
for Relax its fusing cpu_generic pipeline, then the plain one), its scripts run alone as the
finding's were; where one fails in the same TVM frame with the same message, the bug is no
CUDA bug, and the finding says so (extra.target_independent, extra.fails_alike_under).

Run-time crashes count too: a fusing pipeline's bug can first show when the VM loads what
was built (FuseTIR leaving a function used as a value undefined: "Cannot find
ffi::Function f1", which cuda's own pipeline meets and llvm's fusing one meets alike). A
worker's death is not retried: with no traceback, "alike" could not be told."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..core.finding import Finding, normalize_message, top_tvm_frame
from ..core.targets import target_kind
from ..protocol import describe_config
from .verify import ReproOutcome, raised_text


def llvm_retries(config: dict, pipelines: tuple[str, ...]) -> list[dict]:
    """The failing configuration on llvm under each pipeline (none where it was on llvm)."""
    if target_kind(config["target"]) == "llvm":
        return []
    return [{**config, "target": "llvm", "pipeline": pipeline} for pipeline in pipelines]


def retry_fails_alike(finding: Finding, outcome: ReproOutcome) -> bool:
    """Did the scripts fail as the finding did: at its stage, with its exception (the
    verify checks), in its deepest TVM frame, saying the same (normalised) thing as the
    worker's traceback (finding.detail)?"""
    exc_type = finding.extra.get("exc_type") or ""
    if not outcome.reproduced or top_tvm_frame(outcome.output) != top_tvm_frame(finding.detail):
        return False
    seen, said = raised_text(finding.detail, exc_type), raised_text(outcome.output, exc_type)
    return seen is not None and said is not None and normalize_message(seen[1]) == normalize_message(said[1])


@dataclass
class TargetVerdict:
    independent: bool
    alike_under: str = ""  # the llvm configuration that fails alike, in words

    def record(self, finding: Finding):
        finding.extra["target_independent"] = self.independent
        if self.alike_under:
            finding.extra["fails_alike_under"] = self.alike_under


# the stages whose crashes are retried on llvm (a raised exception: its frame and message)
RETRIED_STAGES = ("build", "run")


def judge_target(finding: Finding, config: dict, pipelines: tuple[str, ...],
                 run_scripts: Callable[[dict], ReproOutcome]) -> TargetVerdict | None:
    """Retry a confirmed crash of `config` at build or run time on llvm (`run_scripts(config)`
    renders the finding's scripts for a configuration and runs them alone). None where there
    is nothing to retry: another stage, a death, or a failure on llvm already."""
    if finding.kind != "crash" or finding.stage not in RETRIED_STAGES or not finding.extra.get("exc_type"):
        return None
    retries = llvm_retries(config, pipelines)
    if not retries:
        return None
    for retry in retries:
        if retry_fails_alike(finding, run_scripts(retry)):
            return TargetVerdict(True, describe_config(retry, with_passes=False))
    return TargetVerdict(False)


def target_line(finding: dict) -> list[str]:
    """The bug report's word on target independence, where it was tried."""
    extra = finding.get("extra", {})
    if "target_independent" not in extra:
        return []
    if extra["target_independent"]:
        return [f"**Target-independent:** it fails alike on llvm too ({extra['fails_alike_under']}).", ""]
    return ["**Target-specific:** on llvm it does not fail alike under any of its pipelines.", ""]
