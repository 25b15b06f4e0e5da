"""How a disruptive finding is keyed: one finding per missing check, not per op
(campaign/oracles/disruptive.py violation_signature). Plain functions over text and
findings, no TVM and nothing of the campaign: workers check scripts with them
(campaign/verify.py)."""
from __future__ import annotations

import re

from .finding import Finding, normalize_message

_FRAME_FILE = re.compile(r'File "[^"]*?/src/([^"]+)", line \d+, in ')
_PY_FRAME_FILE = re.compile(r'File "[^"]*?/tvm/([^"]+\.py)", line \d+, in ')
# an op as TVM's messages name it: "tirx.sinh", "relax.add", "nn.conv2d"
_DOTTED_OP = re.compile(r"\b(?:tirx|tir|relax|relay|topi|nn|image|vision)\.[A-Za-z_][\w.]*")
# a dtype after normalize_message turned its digits to N: int8 -> intN, float16x4 -> floatNxN
_DTYPE = re.compile(r"\b(?:u?int|b?float|e\dm\d\w*)N(?:xN)?\b|\bbool\b|\buintN\b")
# the code's own name for the value a check tests: `t.MatchesCode(` and `dtype.MatchesCode(`
# test the same thing
_RECEIVER = re.compile(r"(?<![\w.>:])[a-z_][a-z0-9_]*\.(?=[A-Za-z_]\w*\()")


def failing_file(trace: str) -> str:
    """The TVM source file of the deepest frame, C++ or else TVM's Python (TOPI's asserts);
    its function left out: LLVM codegen's CreateAdd and CreateSub miss the same bool branch."""
    files = _FRAME_FILE.findall(trace or "") or _PY_FRAME_FILE.findall(trace or "")
    return files[-1] if files else ""


def message_key(message: str, op_names: tuple[str, ...]) -> str:
    """What TVM says, as one missing check says it whatever op and dtype met it."""
    line = normalize_message(message)
    line = _DOTTED_OP.sub("OP", line)
    for name in sorted({n for n in op_names if n}, key=len, reverse=True):
        line = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", "OP", line)
    line = _DTYPE.sub("DT", line)
    return _RECEIVER.sub("", line)


def op_names(violation: dict, dialect_op: str) -> tuple[str, ...]:
    """The names a message may give the violating op: the spec's, the dialect's, its last part."""
    return violation["op"], dialect_op, dialect_op.rsplit(".", 1)[-1]


def fails_at_same_check(finding: Finding, trace: str, messages: tuple[str, ...]) -> bool:
    """Does a script's failure (its traceback and what it said, in any of `messages`' forms)
    key as the poor diagnostic `finding` does: the same place in TVM, the same words?"""
    parts = finding.signature.split("|", 4)  # class|kind|exc_type|where|said (violation_signature)
    if len(parts) < 5:
        return False
    names = tuple(finding.extra.get("op_names") or ())
    return (failing_file(trace) or finding.stage) == parts[3] and parts[4] in {message_key(m, names) for m in messages}


def violation_hit(finding: Finding) -> dict | None:
    """What `finding.extra.hit_by` lists of one hit: its op, dtype and what was broken."""
    v = finding.extra.get("violation")
    if v is None:
        return None
    return {"op": v["op"], "dtype": v["dtype"], "kind": v["kind"], "detail": v["detail"], "case": finding.case}


def add_violation_hit(known: Finding, hit: Finding) -> bool:
    """List `hit`'s op and dtype in `known.extra.hit_by` (once each); returns whether its op
    is new to the finding (then a short script of it is kept beside the first: also-<op>.py)."""
    entry = violation_hit(hit)
    if entry is None:
        return False
    listed = known.extra.setdefault("hit_by", [violation_hit(known)])
    if any(e["op"] == entry["op"] and e["dtype"] == entry["dtype"] for e in listed):
        return False
    new_op = all(e["op"] != entry["op"] for e in listed)
    listed.append(entry)
    return new_op


def also_script_name(op: str) -> str:
    return f"also-{re.sub(r'[^A-Za-z0-9_.-]', '_', op)}.py"
