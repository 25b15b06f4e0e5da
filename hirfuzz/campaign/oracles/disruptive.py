"""The disruptive oracle (`--mode disruptive`): a valid graph with one violation planted on
purpose (core.violations), built and run under the baseline. What TVM did with it is
classified (core.violations.classify): a clean rejection is fine; a poor diagnostic, a
crash or a silent acceptance is a finding."""
from __future__ import annotations

from ...core.finding import Finding, crash_signature, death_signature, error_line
from ...core.violations import classify as classify_violation
from ..outcome import Outcome, Status
from ..sandbox import Death
from .base import Oracle, OracleDefinition


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
            documented = specs.ops[v["op"]].limitation(v["kind"], v["dtype"]) if v["op"] in specs.ops else None
            detail, extra = (f"the spec documents it ({v['kind']}): {documented.note}" if documented else ""), {}
        extra["violation"] = v
        kind = "hang" if isinstance(answer, Death) and answer.reason == "timeout" else cls
        finding = Finding(kind=kind, oracle=self.name.value, stage=stage, signature=f"{cls}|{sig}",
                          message=f"{message} [{what}]" if status is not Status.SILENT_ACCEPTANCE else message,
                          detail=detail, case=case.index, extra=extra)
        return Outcome(status, stage, finding, detail)
