"""The disruptive oracle (`--mode disruptive`): a valid graph with one violation planted on
purpose (core.violations), built and run under the baseline. What TVM did with it is
classified (core.violations.classify): a clean rejection is fine; a poor diagnostic, a
crash or a silent acceptance is a finding.

A finding is one missing check, not one op: its signature is the violation's kind and where
TVM fails (the source file of its deepest frame, or the stage) with what it says there, the
op names, dtypes and the code's own local names left out; or, for a silent acceptance, where
it should have failed (the op's type inference). So LLVM codegen's missing bool branch, met
by add, subtract, matmul or minimum on bool, is one finding; each op and dtype that hits it
is listed in its `extra.hit_by` (violation_hit), and the findings tables keep one short
script per op beside the first (also-<op>.py)."""
from __future__ import annotations

from ...core.finding import Finding, death_signature, error_line
from ...core.violation_key import failing_file, message_key, op_names, violation_hit
from ...core.violations import classify as classify_violation
from ..outcome import Outcome, Status
from ..sandbox import Death
from .base import Oracle, OracleDefinition


def violation_signature(cls: str, violation: dict, answer, stage: str, dialect_op: str) -> str:
    """The signature of a disruptive finding: one per missing check (module docstring)."""
    kind = violation["kind"]
    if isinstance(answer, Death):  # no frame to tell two causes apart: the op keeps them apart
        return "|".join([cls, kind, violation["op"], death_signature(answer.reason, answer.signal)])
    if cls == Status.SILENT_ACCEPTANCE.value:  # where it should have failed: the op's type inference
        return "|".join([cls, kind, dialect_op or violation["op"]])
    where = failing_file(answer["traceback"]) or stage
    said = message_key(answer["message"], op_names(violation, dialect_op))
    return "|".join([cls, kind, answer["exc_type"], where, said])


class DisruptiveOracle(OracleDefinition):
    name = Oracle.DISRUPTIVE

    def disruptive_config(self, maker) -> dict:
        """The one configuration of a disruptive case (cases.CaseMaker.make_disruptive_case)."""
        return maker.config(maker.info.baseline, maker.targets[0], self.name)

    def judge(self, specs, case, answer) -> Outcome:
        """What TVM did with the broken program (`answer`: the worker's reply, or its Death)."""
        v = case.disruption["violation"]
        cls, stage = classify_violation(answer, v)
        status = Status(cls)
        if status in (Status.CLEAN_REJECTION, Status.ACCEPTED_UNLISTED_DTYPE):
            return Outcome(status, stage)
        what = f"{v['kind']} on {v['op']} ({v['detail']})"
        spec = specs.ops.get(v["op"])
        dialect_op = spec.dialect_op if spec is not None else v["op"]
        sig = violation_signature(cls, v, answer, stage, dialect_op)
        if isinstance(answer, Death):
            message, detail, extra = answer.describe(), answer.log_tail, {"signal": answer.signal or answer.reason}
        elif status is Status.POOR_DIAGNOSTIC:
            said = error_line(answer["exc_type"], answer["message"])
            message = said[:270]
            detail, extra = answer["traceback"], {"exc_type": answer["exc_type"]}
        else:  # silent acceptance
            message = f"accepted and ran: {what}"
            documented = spec.limitation(v["kind"], v["dtype"]) if spec is not None else None
            detail, extra = (f"the spec documents it ({v['kind']}): {documented.note}" if documented else ""), {}
        extra["violation"] = v
        extra["op_names"] = list(op_names(v, dialect_op))
        kind = "hang" if isinstance(answer, Death) and answer.reason == "timeout" else cls
        finding = Finding(kind=kind, oracle=self.name.value, stage=stage, signature=sig,
                          message=f"{message} [{what}]" if status is not Status.SILENT_ACCEPTANCE else message,
                          detail=detail, case=case.index, extra=extra)
        finding.extra["hit_by"] = [violation_hit(finding)]
        return Outcome(status, stage, finding, detail)
