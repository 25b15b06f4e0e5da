"""How a disruptive finding is keyed: one finding per missing check, not per op
(campaign/oracles/disruptive.py violation_signature). Plain functions over text and
findings, no TVM and nothing of the campaign: workers check scripts with them
(campaign/verify.py).

Where TVM failed while typing the program, the check that fired is the finding: where it
is (the deepest TVM frame's file) and what it says. Where the violation got past type
inference (a failure in a later pass, in codegen or at run time, a death, or a program
that runs), the check that should have fired is missing in the function that types the op
(the op spec's `infer`: Relax's InferTypeBroadcastArith types divide, right_shift and
logical_or alike), whatever later trips over it: right_shift on float32 failing in TIR's
op utilities and divide on bool failing in LLVM codegen are one finding."""
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


# the stages at which TVM types the program: Relax normalises each call as it is emitted
# (lower), Relay's InferType runs on the lowered module (lower, well_formed)
TYPING_STAGES = ("lower", "well_formed")
# violations one check refuses for every op: the argument count against the op's registered
# arguments (Relax's CheckNumArguments, which the gather and scatter inferences skip, then
# read an argument that is not there; Relay's type solver), and a match_cast's shape (the
# VM's run-time check). Whether TVM then fails while typing (an IndexError) or later, or
# runs, one check is missing or poor: one finding.
_CHECKED_FOR_EVERY_OP = {"arity": "argument count", "match-cast-lie": "match_cast"}


def checked_for_every_op(kind: str) -> bool:
    return kind in _CHECKED_FOR_EVERY_OP
MISSING_CHECK = "missing-check"


def missing_check_key(violation: dict, inference_site: str) -> str:
    """The key of a violation TVM let past type inference: the check missing in the
    function typing the op (`inference_site`), of the attribute broken for one out of range;
    one place for every op where no op's own inference should refuse it."""
    kind = violation["kind"]
    site = _CHECKED_FOR_EVERY_OP.get(kind, inference_site)
    if kind == "attr-out-of-range" and violation.get("attr"):
        site = f"{site}.{violation['attr']}"
    return "|".join([MISSING_CHECK, kind, site])


def failure_key(exc_type: str, trace: str, message: str, stage: str, names: tuple[str, ...]) -> dict:
    """A poor diagnostic's failure as a script must show it again: the exception, where in
    TVM (the deepest frame's file, or the stage) and what it says, op names and dtypes out."""
    return {"exc_type": exc_type, "where": failing_file(trace) or stage, "said": message_key(message, names)}


def later_failure_key(finding: Finding) -> str | None:
    """Where a violation past type inference failed later, as a key two findings share when
    two inference functions lack one check and their ops then trip over one later check in
    TVM's source (Relax's sort and topk on int16 both reach the runtime sort's dtype
    dispatch): the kind, the exception, the file and what it says. None for a finding keyed
    otherwise, or one whose failure names no TVM source file: a bare std::bad_alloc at run
    time, or TVM 0.19's errors, raised from its FFI's Python (_ffi/base.py) whatever C++
    check failed, say nothing of which check is missing."""
    seen = finding.extra.get("fails_at")
    kind = (finding.extra.get("violation") or {}).get("kind")
    if not seen or not finding.signature.startswith(f"{MISSING_CHECK}|") or not _names_a_source(seen["where"]):
        return None
    return "|".join(["fails-later", kind or "", seen["exc_type"], seen["where"], seen["said"]])


def _names_a_source(where: str) -> bool:
    return "/" in where and not where.startswith(_FFI_PYTHON)


_FFI_PYTHON = ("_ffi/", "ffi/")


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
    fail as the poor diagnostic `finding` did (its `extra.fails_at`): the same place in
    TVM, the same words?"""
    seen = finding.extra.get("fails_at")
    if not seen:
        return False
    names = tuple(finding.extra.get("op_names") or ())
    return (failing_file(trace) or finding.stage) == seen["where"] and seen["said"] in {message_key(m, names) for m in messages}


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
