"""Judging a worker's answer to a case: what the oracles make of it.

An `Outcome` is how far the case got (`Status`, and the stage that failed) and the
finding it shows, if any. Which oracle judges a configuration follows from what sets it
apart from the baseline (`oracle_of`). Judging has no side effects: the campaign counts
and records outcomes, and the reducer judges its trial runs with the same `Judge`.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable

from ..core.finding import Finding, crash_signature, death_signature, error_line, ill_formed_signature
from ..dialects.base import ILL_FORMED_STAGE
from ..core.oracle import Approximation, compare_results
from ..core.violations import classify as classify_violation
from ..protocol import decode_array, describe_config
from .cases import Case
from .sandbox import Death


class Status(Enum):
    """How far a case got, as its baseline's answer (or a disruptive case's) says."""
    OK = "ok"              # ran, and its results agree with the reference
    RAN = "ran"            # ran; no result was stable enough to compare
    BUILT = "built"        # built, not run: every input draw may trap
    MISMATCH = "mismatch"  # ran, and a result differs
    ERROR = "error"        # failed at a stage (Outcome.stage)
    # its worker died (sandbox.Death.reason)
    SIGNAL = "signal"
    EXIT = "exit"
    TIMEOUT = "timeout"
    # disruptive mode: what TVM did with the broken program (core.violations.CLASSES),
    # at a stage (Outcome.stage)
    CLEAN_REJECTION = "clean-rejection"
    POOR_DIAGNOSTIC = "poor-diagnostic"
    CRASH = "crash"
    SILENT_ACCEPTANCE = "silent-acceptance"
    ACCEPTED_UNLISTED_DTYPE = "accepted-unlisted-dtype"   # counted, not a finding (violations.classify)


class Oracle(str, Enum):
    """The oracle that judged a finding. A str, so it compares equal to Finding.oracle,
    which holds its value (finding.json and summary.json spell oracles as they always did)."""
    CRASH = "crash"            # the baseline crashed, or its worker died
    REFERENCE = "reference"    # the baseline's results, against the NumPy reference
    PASS_ORDER = "pass-order"  # a configuration that ran a pass sequence
    EXECUTOR = "executor"      # another executor or target
    MUTATION = "mutation"      # the mutant, built as the baseline
    DISRUPTIVE = "disruptive"  # what TVM did with a program broken on purpose
    CROSS_IR = "cross-ir"      # a cross-IR campaign's second IR, in its own TVM (campaign.cross)


def what_failed(finding: Finding) -> str:
    """A finding's signature without the oracle that saw it: one crash under a pass sequence
    and under the executor alone is one failure (Judge._prefix)."""
    return finding.signature.removeprefix(Judge._prefix(Oracle(finding.oracle)))


# the oracles that judge a configuration against the baseline's run: a reproducer of
# their findings builds both
AGAINST_BASELINE = (Oracle.PASS_ORDER, Oracle.EXECUTOR, Oracle.MUTATION)


def oracle_of(config: dict) -> Oracle:
    """The oracle that judges a configuration other than the baseline (whose results are
    checked against the reference: `Judge.baseline`): what sets it apart from the baseline
    (a mutant, a pass sequence, or another executor or target)."""
    if config.get("module"):
        return Oracle.MUTATION
    return Oracle.PASS_ORDER if config["passes"] else Oracle.EXECUTOR


@dataclass
class Outcome:
    status: Status
    stage: str | None = None        # where an error, or a disruptive case's class, was seen
    finding: Finding | None = None
    log: str = ""

    @property
    def status_text(self) -> str:
        """The status as stats.jsonl spells it: "ok", "signal", "error:build",
        "clean-rejection:lower"."""
        return self.status.value if self.stage is None else f"{self.status.value}:{self.stage}"


class Judge:
    """The oracles, applied to one answer at a time.

    A cross-IR campaign's second IR is judged by a Judge whose `baseline` oracle is
    CROSS_IR: its crashes and wrong results are that oracle's (their signatures say so, apart
    from the first IR's), and its messages name the IR and TVM (`label`).
    """

    def __init__(self, specs, mutators: dict[int, list[str]], baseline: Oracle = Oracle.REFERENCE,
                 label: Callable[[], str] = lambda: ""):
        self.specs = specs
        # case -> the mutators its mutant went through, as the campaign recorded them from
        # its answer (a mutant's wrong result is keyed on them); read here, never written
        self._mutators = mutators
        self.baseline = baseline
        self.crash_oracle = Oracle.CRASH if baseline is Oracle.REFERENCE else baseline
        self.label = label  # "Relax on TVM 0.27.0": known once the workers have said so

    def classify(self, case: Case, answer) -> Outcome:
        """What an answer means; no side effects, so the reducer can use it too."""
        if case.disruption is not None:
            return self.classify_disruptive(case, answer)
        if isinstance(answer, Death):
            kind = "hang" if answer.reason == "timeout" else "crash"
            finding = Finding(kind=kind, oracle=self.crash_oracle.value, stage="worker",
                              signature=self._prefix(self.crash_oracle) + death_signature(answer.reason,
                                                                                          answer.signal),
                              message=answer.describe(), detail=answer.log_tail, case=case.index,
                              extra={"signal": answer.signal or answer.reason, "config": case.configs[0]})
            return Outcome(Status(answer.reason), finding=finding, log=answer.log_tail)
        if answer["status"] == "error" and answer["stage"] in ("lower", "well_formed"):
            # TVM refused a program the specs call valid: a spec to fix (or a type inference
            # bug to look at by hand), never reported as a TVM crash
            outcome = self._judge_config(case, answer, case.configs[0], self.crash_oracle)
            outcome.finding.kind = "spec-disagreement"
            return outcome
        base = self._judge_config(case, answer, case.configs[0], self.baseline)
        if base.finding is not None or answer["status"] == "error":
            return base
        for config, other in zip(case.configs[1:], answer.get("others", [])):
            if other["status"] == "skipped":  # the mutator failed (hirfuzz's own bug), or the
                continue                      # executor cannot take the program by design
            outcome = self._judge_config(case, other, config, oracle_of(config))
            if outcome.finding is not None:  # the baseline's status counts
                return Outcome(base.status, base.stage, outcome.finding, outcome.log)
        return base

    def _judge_config(self, case: Case, reply: dict, config: dict, oracle: Oracle) -> Outcome:
        """One configuration's reply: a crash, a result that differs from the reference, or fine.

        The baseline's crashes are the crash oracle's; a configuration that fails or differs
        while the baseline did not is the pass-order oracle's (it ran a pass sequence) or
        the executor oracle's (another executor or target). A pass sequence that may change
        results on purpose is compared only within the approximation its passes document
        (oracle.Approximation), never exactly.
        """
        if reply["status"] == "error":
            return self._crash(case, reply, config, self.crash_oracle if oracle is self.baseline else oracle)
        if not case.runnable:
            return Outcome(Status.BUILT)
        outputs = [decode_array(a) for a in reply["outputs"]]
        if oracle is Oracle.MUTATION:
            outputs = outputs[:len(case.expected)]  # expose_output appends results at the end
        mismatches = compare_results(case.expected, outputs, Approximation.of_passes(config["passes"]))
        if not mismatches:
            return Outcome(Status.OK if any(f.stable for f in case.expected) else Status.RAN)
        return Outcome(Status.MISMATCH, finding=self._wrong_result(case, mismatches, config, oracle))

    @staticmethod
    def _prefix(oracle: Oracle) -> str:
        return "" if oracle is Oracle.CRASH else f"{oracle.value}|"

    def _crash(self, case: Case, reply: dict, config: dict, oracle: Oracle) -> Outcome:
        stage, exc_type = reply["stage"], reply["exc_type"]
        said = error_line(exc_type, reply["message"])
        if stage == ILL_FORMED_STAGE:
            # the first pass whose output is ill-formed is the bug, not what later trips over
            # it: keyed on that pass and what the check says, not on where the module broke
            blamed = reply["blamed_pass"]
            finding = Finding(kind="crash", oracle=oracle.value, stage=stage,
                              signature=self._prefix(oracle) + ill_formed_signature(blamed, reply["message"]),
                              message=f"{blamed} left an ill-formed module: {said[:300]}{self._under(config, oracle)}",
                              detail=reply["traceback"], case=case.index,
                              extra={"exc_type": exc_type, "config": config, "blamed_pass": blamed})
            return Outcome(Status.ERROR, stage, finding, reply["traceback"])
        finding = Finding(kind="crash", oracle=oracle.value, stage=stage,
                          signature=self._prefix(oracle) + crash_signature(stage, exc_type, reply["message"],
                                                                           reply["traceback"]),
                          message=f"{said[:320]}{self._under(config, oracle)}", detail=reply["traceback"],
                          case=case.index, extra={"exc_type": exc_type, "config": config})
        return Outcome(Status.ERROR, stage, finding, reply["traceback"])

    def _wrong_result(self, case: Case, mismatches: list, config: dict, oracle: Oracle) -> Finding:
        first = mismatches[0]
        results = case.graph.results()
        node = case.graph.nodes[results[first.index].node] if 0 <= first.index < len(results) else None
        where = f"{node.op}:{node.dtype}" if node is not None else "arity"
        detail = "\n".join(f"result {m.index}: {m.detail}" for m in mismatches)
        if oracle is Oracle.MUTATION:
            # the mutant is meant to equal the original, which agreed with the reference:
            # hirfuzz's mutator, not TVM, is the first suspect (issue policy); logged apart
            return Finding(
                kind="mutant-disagreement", oracle=oracle.value, stage="run",
                signature=f"mutant-disagreement|{','.join(self._mutators.get(case.index, []))}|{where}",
                message=f"the mutant's result {first.index} ({where}) differs from the reference: {first.detail}",
                detail=detail, case=case.index, extra={"config": config})
        # a pass sequence's wrong results are one bug per (minimal) sequence, whichever
        # result shows it; another executor's or target's, one per operator and dtype
        if oracle is Oracle.PASS_ORDER:
            key = f"{config['name']}:{config['target']}|{','.join(step['name'] for step in config['passes'])}"
        else:
            key = (config["target"] if oracle in (Oracle.REFERENCE, Oracle.CROSS_IR)
                   else f"{config['name']}:{config['target']}") + f"|{where}"
        approximation = Approximation.of_passes(config["passes"])
        beyond = " beyond the approximation its passes document" if approximation is not None else ""
        return Finding(kind="wrong-result", oracle=oracle.value, stage="run",
                       signature=f"wrong-result|{oracle.value}|{key}",
                       message=f"result {first.index} ({where}) differs from the NumPy reference{beyond}"
                               f"{self._under(config, oracle)}: {first.detail}",
                       detail=detail, case=case.index, extra={"config": config})

    def classify_disruptive(self, case: Case, answer) -> Outcome:
        v = case.disruption["violation"]
        cls, stage = classify_violation(answer, v)
        status = Status(cls)
        if status in (Status.CLEAN_REJECTION, Status.ACCEPTED_UNLISTED_DTYPE):
            return Outcome(status, stage)
        what = f"{v['kind']} on {v['op']} ({v['detail']})"
        if isinstance(answer, Death):
            sig = death_signature(answer.reason, answer.signal)
            message, detail, extra = answer.describe(), answer.log_tail, {"signal": answer.signal or answer.reason}
        elif status is Status.POOR_DIAGNOSTIC:
            sig = crash_signature(stage, answer["exc_type"], answer["message"], answer["traceback"])
            said = error_line(answer["exc_type"], answer["message"])
            message = said[:270]
            detail, extra = answer["traceback"], {"exc_type": answer["exc_type"]}
        else:  # silent acceptance: nothing to key on but what was broken
            sig = f"{v['op']}|{v['kind']}"
            message = f"accepted and ran: {what}"
            note = self.specs.ops[v["op"]].note if v["op"] in self.specs.ops else ""
            detail, extra = (f"the spec's note on {v['op']}: {note}" if note else ""), {}
        extra["violation"] = v
        kind = "hang" if isinstance(answer, Death) and answer.reason == "timeout" else cls
        finding = Finding(kind=kind, oracle=Oracle.DISRUPTIVE.value, stage=stage, signature=f"{cls}|{sig}",
                          message=f"{message} [{what}]" if status is not Status.SILENT_ACCEPTANCE else message,
                          detail=detail, case=case.index, extra=extra)
        return Outcome(status, stage, finding, detail)

    def _under(self, config: dict, oracle: Oracle) -> str:
        """" under <configuration>" in the message of a finding not on the first IR's baseline."""
        if oracle in (Oracle.CRASH, Oracle.REFERENCE):
            return ""
        where = describe_config(config, with_passes=False)
        return f" under {self.label()}, {where}" if oracle is Oracle.CROSS_IR else f" under {where}"
