"""Triage classes: what kind of problem a finding is, the component of TVM it points at,
and the evidence for the guess (finding.json's extra.triage, report.md's groups)."""
from __future__ import annotations

from enum import Enum

from ..core.finding import Finding
from .oracles import Component, definition
from .titles import message_error


class TriageClass(str, Enum):
    CRASH_ON_VALID = "crash on a valid program"
    WRONG_RESULT = "wrong result"
    ILL_FORMED_PASS_OUTPUT = "ill-formed pass output"
    POOR_DIAGNOSTIC = "poor diagnostic"
    SILENT_ACCEPTANCE = "silent acceptance"
    DOCUMENTED_LIMITATION = "documented limitation"


# a build that fails in these parts of TVM fails on an operator's own lowering, not on codegen
_OPERATOR_FRAMES = ("legalize", "topi", "/op/", "op_common", "infer_struct_info", "type_relations")


def _build_component(finding: Finding) -> tuple[Component, str]:
    trace = f"{finding.detail}\n{finding.message}".lower()
    frame = next((f for f in _OPERATOR_FRAMES if f in trace), None)
    if frame is not None:
        return Component.OPERATOR, f"the error comes from an operator's lowering ('{frame}' in its traceback)"
    return Component.CODEGEN, "the error comes from compiling the program (no operator's lowering in its traceback)"


def _crash_component(finding: Finding) -> tuple[Component, str]:
    passes = finding.extra.get("passes")
    if finding.stage == "passes":
        return Component.PASS, f"the pass sequence {passes} raised"
    if finding.stage == "run":
        return Component.VM, "the program built; running it on the VM failed"
    if finding.stage == "worker":
        return _death_component(finding)
    return _build_component(finding)


def _death_component(finding: Finding) -> tuple[Component, str]:
    """Where a dead worker said it was (judge.Judge._death's "died_in"): in a pass, running
    the program, or (nowhere said) building or running it."""
    died = f"the process died ({finding.extra.get('signal')})"
    where = finding.extra.get("died_in", {})
    if where.get("pass"):
        return Component.PASS, f"{died} in pass {where['pass']}"
    if where.get("stage") in ("load", "run"):
        return Component.VM, f"{died} while {'loading' if where['stage'] == 'load' else 'running'} the built program"
    if where.get("stage") == "build":
        return Component.CODEGEN, f"{died} while building"
    return Component.CODEGEN, f"{died} while building or running"


def classify_finding(finding: Finding, specs=None) -> dict:
    """The triage class of a finding, the component it points at, and the evidence for the
    guess, as plain data for finding.json and the reports (`specs`: the campaign's op specs,
    whose `limitations` say which behaviour on an invalid program is documented)."""
    cls, (component, why) = _classified(finding, specs)
    return {"class": cls.value, "component": component.value, "evidence": why}


def _documenting(specs, violation: dict):
    """The spec entry documenting what TVM does with this violation (spec.Limitation), if any:
    a note on the op that names another behaviour documents nothing about this one."""
    op = specs.ops.get(violation["op"]) if specs is not None else None
    return op.limitation(violation["kind"], violation["dtype"]) if op is not None else None


def _classified(finding: Finding, specs) -> tuple[TriageClass, tuple[Component, str]]:
    violation = finding.extra.get("violation")
    if finding.stage == "ill_formed_after_pass":
        blamed = finding.extra.get("blamed_pass")
        complaint = message_error(finding.to_json())
        return TriageClass.ILL_FORMED_PASS_OUTPUT, (
            Component.PASS, f"well_formed held before {blamed} and failed after it: {complaint[:160]}")
    if violation is not None:
        what = f"{violation['kind']} on {violation['op']} ({violation['detail']})"
        if finding.kind == "silent-acceptance":
            documented = _documenting(specs, violation)
            if documented is not None:
                return TriageClass.DOCUMENTED_LIMITATION, (
                    Component.OPERATOR, f"TVM accepted {what}, documented ({documented.kind}): {documented.note}")
            return TriageClass.SILENT_ACCEPTANCE, (Component.OPERATOR, f"TVM built and ran a program with {what}")
        if finding.kind == "poor-diagnostic":
            return TriageClass.POOR_DIAGNOSTIC, (
                Component.OPERATOR, f"{what} was rejected with {finding.extra.get('exc_type')}, an internal error, "
                                    "not a diagnostic naming the problem")
        # an invalid program that kills TVM (a signal, a hang) got no diagnostic at all
        component, where = _crash_component(finding)
        return TriageClass.POOR_DIAGNOSTIC, (component, f"{what} crashed TVM instead of being rejected: {where}")
    if finding.kind == "wrong-result":
        return TriageClass.WRONG_RESULT, definition(finding.oracle).wrong_result_component(finding)
    component, where = _crash_component(finding)
    return TriageClass.CRASH_ON_VALID, (
        component, f"the program is valid (strictly generated, well-formed and type-checked before any pass): {where}")
