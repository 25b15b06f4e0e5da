"""The disruptive oracle (`--mode disruptive`): a valid graph with one violation planted on
purpose (core.violations), built and run under the baseline. What TVM did with it is
classified (core.violations.classify): a clean rejection is fine; a poor diagnostic, a
crash or a silent acceptance is a finding.

A finding is one missing check, not one op (core/violation_key.py): a poor diagnostic
raised while TVM types the program is keyed on that check (the violation's kind, the
exception, the source file of its deepest frame, what it says less op names, dtypes and
the code's own local names); a violation that got past type inference (a failure later, a
death, a program that runs) on the check missing in the function typing the op (the op
spec's `infer`), whatever later trips over it. So right_shift on float32 (failing in TIR's
op utilities), logical_or on int8 and divide on bool (LLVM codegen), all typed by Relax's
InferTypeBroadcastArith, are one finding; each op and dtype that hits it is listed in its
`extra.hit_by` (violation_hit), and the findings tables keep one short script per op beside
the first (also-<op>.py), once it fails as its own hit did."""

from __future__ import annotations

from ...core.finding import Finding, error_line
from ...core.violation_key import (TYPING_STAGES, checked_for_every_op, failure_key, missing_check_key, op_names,
                                   violation_hit)
from ...core.violations import classify as classify_violation
from ..outcome import Outcome, Status
from ..sandbox import Death
from .base import Oracle, OracleDefinition


def violation_signature(violation: dict, stage: str, fails_at: dict | None, inference_site: str) -> str:
    """The signature of a disruptive finding: one per missing check (module docstring).
    `fails_at`: a poor diagnostic's failure (core.violation_key.failure_key), else None."""
    if fails_at is not None and stage in TYPING_STAGES and not checked_for_every_op(violation["kind"]):
        return "|".join([Status.POOR_DIAGNOSTIC.value, violation["kind"], fails_at["exc_type"], fails_at["where"],
                         fails_at["said"]])
    return missing_check_key(violation, inference_site)


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
        fails_at = None
        if isinstance(answer, Death):
            message, detail, extra = answer.describe(), answer.log_tail, {"signal": answer.signal or answer.reason}
        elif status is Status.POOR_DIAGNOSTIC:
            said = error_line(answer["exc_type"], answer["message"])
            message = said[:270]
            detail, extra = answer["traceback"], {"exc_type": answer["exc_type"]}
            fails_at = failure_key(answer["exc_type"], answer["traceback"], answer["message"], stage,
                                   op_names(v, dialect_op))
            extra["fails_at"] = fails_at
        else:  # silent acceptance
            message = f"accepted and ran: {what}"
            documented = spec.limitation(v["kind"], v["dtype"]) if spec is not None else None
            detail, extra = (f"the spec documents it ({v['kind']}): {documented.note}" if documented else ""), {}
        sig = violation_signature(v, stage, fails_at, spec.inference_site if spec is not None else v["op"])
        extra["violation"] = v
        extra["op_names"] = list(op_names(v, dialect_op))
        kind = "hang" if isinstance(answer, Death) and answer.reason == "timeout" else cls
        finding = Finding(kind=kind, oracle=self.name.value, stage=stage, signature=sig,
                          message=f"{message} [{what}]" if status is not Status.SILENT_ACCEPTANCE else message,
                          detail=detail, case=case.index, extra=extra)
        finding.extra["hit_by"] = [violation_hit(finding)]
        return Outcome(status, stage, finding, detail)
