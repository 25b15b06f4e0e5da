"""Bug-report titles as a person writes them: who does what wrong, in at most 100
characters, from the reduced program, never cut inside a word.

A title is "[Bug][<IR>] " and a template of the finding's situation (titles.yaml): a head
(the pass or operator to blame and what it does wrong, never cut) and a detail, the
essence of TVM's error ("Expected TensorType, but got R.Callable" rather than
"InternalError: Check failed: (tensor) is false: Expected TensorType, but got
R.Callable((R.Tensor((1, 4), ..."), shortened first, at a clause or a word boundary.

Titles are report text only: signatures and messages (what deduplicates findings) are
never derived from them.
"""
from __future__ import annotations

import functools
import re
import string
from enum import Enum
from importlib import resources

import yaml

from ..core.attributes import key_roles
from ..core.finding import operator_code_frame
from ..dialects import dialect_info, dialect_infos
from ..core.targets import target_kind, target_label
from ..protocol import GRADIENT_PASS, describe_config, short_op_reprs
from .oracles import Oracle, definition
from .oracles.gradient import GradientDiffers

TITLE_WIDTH = 100
MIN_DETAIL = 30   # a head must leave this much room for the detail (or all of a shorter one)
ELLIPSIS = " ..."


class Situation(str, Enum):
    """What a finding shows, as its title tells it; the values key titles.yaml's templates."""
    ILL_FORMED_OUTPUT = "ill-formed-output"
    PASS_CRASH = "pass-crash"
    PASS_DEATH = "pass-death"
    BREAKS_AFTER_PASSES = "breaks-after-passes"
    HANG_AFTER_PASSES = "hang-after-passes"
    CRASH = "crash"
    HANG = "hang"
    WRONG_RESULT_AFTER_PASSES = "wrong-result-after-passes"
    WRONG_RESULT = "wrong-result"
    WRONG_RESULT_ELSEWHERE = "wrong-result-elsewhere"
    WRONG_GRADIENT = "wrong-gradient"
    POOR_DIAGNOSTIC = "poor-diagnostic"
    SILENT_ACCEPTANCE = "silent-acceptance"


@functools.cache
def phrases() -> dict:
    doc = yaml.safe_load(resources.files("hirfuzz").joinpath("titles.yaml").read_text())
    missing = [s.value for s in Situation if not doc.get("templates", {}).get(s.value)]
    if missing:  # package data, not user input: a developer's slip, named where it is
        raise ValueError(f"hirfuzz/titles.yaml: templates: no template for {', '.join(missing)}")
    return doc


def shorten(text: str, width: int = TITLE_WIDTH) -> str:
    """`text` on one line in at most `width` characters, cut between words, never inside one."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:width - len(ELLIPSIS)]
    cut = cut[:cut.rfind(" ")] if " " in cut else cut
    return cut.rstrip(" ,:;(") + ELLIPSIS


# --- the essence of TVM's error ----------------------------------------------------------------

_EXC_TYPE = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<type>[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt))\b:?\s*")
_CHECK = re.compile(r"Check failed:\s*(?:\((?P<cond>.*)\) is false|(?P<cmp>.*?)\s*\((?P<got>[^()]*? vs\. [^()]*?)\))"
                    r"\s*:?\s*(?P<why>.*)$", re.S)
_SOURCE_LOCATION = re.compile(r"^\[[\d:.]+\]\s+\S+:\d+:\s*|\b[\w/.-]+\.(?:cc|cpp|h|py):\d+:?\s*")
_PRIM_VALUE = re.compile(r"\bT\.(?:u?int|float|bfloat)\d+\((-?[\d.]+)\)")
_DTYPE = re.compile(r"\bT\.(bool|u?int\d+|float\d+|bfloat16)\b")
_GLUED_DTYPE = re.compile(r"(?<=[a-z])T\.(bool|u?int\d+|float\d+|bfloat16)\b")
_GLOBAL_VAR = re.compile(r"\bI\.GlobalVar\((\"[^\"]*\")\)")
# an IR object printed whole ("ir.Op(span=None, ..., name=\"relax.nn.batch_norm\", ...)",
# "R.Callable((R.Tensor(...),), ...)"): said by its name
_IR_NAMESPACES = "|".join(info.namespace for info in dialect_infos())  # relax|relay
_DUMP_HEAD = re.compile(rf"\b(?:R|T|I|ir|tir|tirx|{_IR_NAMESPACES}|tvm|te)\.[A-Za-z_][\w.]*\(")
_OP_NAME = re.compile(r'name="([^"]+)"')
_IR_NAMESPACE = re.compile(rf"(?<!['\"])\b(?:{_IR_NAMESPACES})\.(?=[a-z])")  # relay.stack is the op stack
METADATA_NOTE = re.compile(r"\s*# Metadata omitted\..*$")
_SENTENCE_END = re.compile(r"(?<=[\w)\]\"'`])\.\s+(?=[A-Z])")


def _closing(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at `start` (quotes respected);
    the text's end where a truncated message never closes it."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def collapse_dumps(text: str, elided: str = "", keep: int = 0) -> str:
    """Each IR object printed whole, said by its name (an op by the name it carries);
    `elided` stands for what was left out ("(...)" where the text must stay faithful), and
    objects printed in at most `keep` characters stay as they are."""
    out, pos = [], 0
    for match in _DUMP_HEAD.finditer(text):
        if match.start() < pos:
            continue  # inside a dump already collapsed
        end = _closing(text, match.end() - 1)
        if end - match.start() <= keep:
            continue
        head = match.group()[:-1]
        inner = _OP_NAME.search(text, match.end(), end) if head == "ir.Op" else None
        out += [text[pos:match.start()], inner.group(1) if inner else head + elided]
        pos = end
    return "".join(out) + text[pos:]


def _readable(text: str) -> str:
    """TVM's text with its printer's clutter gone: T.int64(3) is 3, T.bool is bool,
    I.GlobalVar("f1") is "f1", and IR objects are said by name."""
    text = _PRIM_VALUE.sub(r"\1", text)
    text = _GLUED_DTYPE.sub(r" \1", text)
    text = _DTYPE.sub(r"\1", text)
    text = _GLOBAL_VAR.sub(r"\1", text)
    return _IR_NAMESPACE.sub("", collapse_dumps(text))


def split_exception(line: str) -> tuple[str, str]:
    """("InternalError", "the rest") from "tvm.error.InternalError: the rest"; ("", line)
    where the line names no exception type."""
    match = _EXC_TYPE.match(line)
    return (match.group("type"), line[match.end():]) if match else ("", line)


def _innermost_exception(line: str) -> tuple[str, str]:
    """Of nested exception types ("InternalError: ValueError: ..."), the innermost, which
    says what went wrong, and the rest."""
    exc_type, rest = split_exception(line)
    while exc_type:
        inner, rest_ = split_exception(rest)
        if not inner:
            break
        exc_type, rest = inner, rest_
    return exc_type, rest


def essence(error: str, names: tuple[str, ...] = ()) -> str:
    """What TVM's error says went wrong, in a few words: no exception type where the
    message says enough, a failed check's explanation (or "check `cond` fails"), no source
    location, IR dump or sentence after the first. `names` are the pass or operators
    the title names already: a message that starts with one ("one_hot: depth must be
    positive") loses it."""
    exc_type, text = _innermost_exception(" ".join(error.split()))
    text = _SOURCE_LOCATION.sub("", text)
    check = None
    for check in _CHECK.finditer(text):
        pass  # the last check: an error wrapping another ("... identified error: Check failed: ...")
    if check is not None:
        inner_type, why = _innermost_exception(METADATA_NOTE.sub("", check.group("why")).strip())
        exc_type = inner_type or exc_type
        text = why if _says_something(why) else _failed_check(check)
    text = _first_sentence(_readable(text))
    for name in names:
        text = text.removeprefix(f"{name}: ").removeprefix(f"{name.rsplit('.', 1)[-1]}: ")
    if not text:
        return exc_type
    if exc_type in phrases()["keep_exception_type"]:
        return f"{exc_type}: {text}"
    return text


_CXX_SCOPE = re.compile(r"\b\w+::(?=\w)")


def _failed_check(check: re.Match) -> str:
    """"check `cond` fails", the condition without its C++ scopes (DLDataTypeCode::kDLFloat is kDLFloat)."""
    said = phrases()["failed_check"]
    if check.group("cond") is not None:
        return said.format(condition=_CXX_SCOPE.sub("", _readable(check.group("cond"))))
    return said.format(condition=_CXX_SCOPE.sub("", _readable(check.group("cmp")))) + f": {_readable(check.group('got'))}"


def _says_something(why: str) -> bool:
    """Whether a failed check's explanation says more than an IR object's name (log_add_exp's
    "T.te.tensor_load(metadata[...], ax0)")."""
    return bool(_readable(why).strip()) and not re.fullmatch(r"[\w.]+", _first_sentence(_readable(why)))


def _first_sentence(text: str) -> str:
    text = _SENTENCE_END.split(text, 1)[0]
    return text.strip().rstrip(".:;, ").strip()


def full_error(message_error: str, detail: str) -> str:
    """The whole error a finding's message starts (messages are cut at about 300
    characters): its lines in the traceback, up to the blank line that ends them, an op
    named as the message names it (protocol.short_op_reprs)."""
    _, core = split_exception(message_error.strip())
    probe = core[:60]
    if not probe or not detail:
        return message_error
    lines = short_op_reprs(detail).splitlines()
    for i, line in enumerate(lines):
        if split_exception(line.strip())[1].startswith(probe):
            block = [line.strip()]
            for more in lines[i + 1:]:
                if not more.strip() or more.startswith(("Traceback", "The above exception", "  File ")):
                    break
                block.append(more.strip())
            return " ".join(block)
    return message_error


# --- what a title says --------------------------------------------------------------------------

_RESULT = re.compile(r"result \d+ \(([^:()]+):(\w+)\)")


def situation(finding: dict) -> Situation:
    kind, stage, extra = finding["kind"], finding["stage"], finding.get("extra", {})
    after_passes = bool(extra.get("pass_names"))
    if stage == "ill_formed_after_pass":
        return Situation.ILL_FORMED_OUTPUT
    if extra.get("violation"):
        return Situation.SILENT_ACCEPTANCE if kind == "silent-acceptance" else Situation.POOR_DIAGNOSTIC
    if kind == "wrong-result" and finding["oracle"] == Oracle.GRADIENT.value:
        return Situation.WRONG_GRADIENT
    if kind == "wrong-result":
        if after_passes:
            return Situation.WRONG_RESULT_AFTER_PASSES
        return Situation.WRONG_RESULT_ELSEWHERE if definition(finding["oracle"]).elsewhere else Situation.WRONG_RESULT
    if kind == "hang":
        return Situation.HANG_AFTER_PASSES if after_passes else Situation.HANG
    if stage == "passes":
        return Situation.PASS_CRASH
    if stage == "worker" and _died_in_pass(finding):
        return Situation.PASS_DEATH
    return Situation.BREAKS_AFTER_PASSES if after_passes else Situation.CRASH


def message_error(finding: dict) -> str:
    """The error in a finding's message, without the sequence that led there, the
    configuration it ran under, the well-formedness preamble or the violation's note."""
    message = finding["message"]
    passes = finding.get("extra", {}).get("passes")
    if passes and message.startswith(f"after {passes}: "):
        message = message[len(f"after {passes}: "):]
    config = finding.get("extra", {}).get("config")
    under = message.rfind(" under ")
    if config and under >= 0 and message.endswith(describe_config(config, with_passes=False)):
        message = message[:under]
    if finding["oracle"] == Oracle.GRADIENT.value:  # its words for its configuration (oracles/gradient.py)
        message = message.removesuffix(definition(finding["oracle"]).under(config or {}, ""))
    message = message.split(" left an ill-formed module: ", 1)[-1]
    violation = finding.get("extra", {}).get("violation")
    if violation:
        message = message.removesuffix(f" [{violation['kind']} on {violation['op']} ({violation['detail']})]")
    return message


def _named_in(name: str, error: str) -> bool:
    """Does TVM's error name the operator (a fused kernel's "fused_trilu_add" names trilu)?"""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", error) is not None


def _ops(graph, error: str = "", needs: dict | None = None, alone: str | None = None) -> str:
    """The reduced program's operators: "min (float32)" for one, "sum, add and tanh" for
    more, those TVM's `error` names first (the program's others may only feed them); one
    with what it needs of its attributes beyond a window's sizes (finding.json's
    extra.needs): "nn.max_pool2d (float64) with dilation". Where one operator fails alone
    as the finding does (`alone`: extra.keyed_as), it alone: the rest are bystanders
    (bench29 relay seed 23, "the gradient of take, atan and 2 more", take's alone)."""
    if graph is None or not graph.operators:
        return ""
    nodes = graph.operators
    if any(n.op == alone for n in nodes):
        nodes = [n for n in nodes if n.op == alone]
    names = list(dict.fromkeys(n.op for n in nodes))
    names.sort(key=lambda name: not _named_in(name, error))
    if len(names) == 1 and len({n.dtype for n in nodes}) == 1:
        roles = [r for r in key_roles((needs or {}).get(names[0], [])) if r != "window"]
        return f"{names[0]} ({nodes[0].dtype})" + (f" with {', '.join(roles)}" if roles else "")
    shown = names[:3] if len(names) <= 3 else names[:2] + [f"{len(names) - 2} more"]
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def operator_at_fault(finding: dict, graph) -> str:
    """The reduced program's operator whose own code (topi) raised, where root_key places the
    crash there ("tvm/topi/nn/elemwise.py:prelu>get_const_int" is nn.prelu's): a pass that
    crashes lowering it is not what a maintainer looks at first. Named by topi's functions,
    else its file ("image/resize.py" is image.resize2d's); "" where not exactly one operator
    of the program is named."""
    frame = operator_code_frame(finding.get("signature") or "", finding.get("detail") or "")
    if not frame or graph is None:
        return ""
    path, _, functions = frame.partition(":")
    names = list(dict.fromkeys(n.op for n in graph.operators))
    return (operator_named(_IDENTIFIER.findall(functions), names)
            or operator_named([path.rsplit("/", 1)[-1].split(".")[0]], names))


def operator_named(words: list[str], names: list[str]) -> str:
    """The one of `names` that topi's `words` name, the most specific where several are
    ("group_conv2d_transpose_nchw" names conv2d too); "" where none or no one is."""
    found = [name for name in names if any(_names_operator(word, name) for word in words)]
    longest = max((len(_base(name)) for name in found), default=0)
    found = [name for name in found if len(_base(name)) == longest]
    return found[0] if len(found) == 1 else ""


def _base(op: str) -> str:
    return op.rsplit(".", 1)[-1]


def _names_operator(word: str, op: str) -> bool:
    """Does a topi name say the operator: its name within the word's "_" parts
    ("group_conv2d_transpose_nchw" says conv2d_transpose), or the word is it less a dimension
    suffix ("resize" says resize2d)?"""
    base = _base(op)
    parts, wanted = word.split("_"), base.split("_")
    if any(parts[i:i + len(wanted)] == wanted for i in range(len(parts) - len(wanted) + 1)):
        return True
    return base.startswith(word) and base[len(word):] in ("1d", "2d", "3d")


def plan_features(plan: dict | None, dialect: str) -> list[str]:
    """The IR features a reduced program's lowering plan still has, in its IR's words."""
    if not plan:
        return []
    words = phrases()["features"][dialect]
    found = []
    for cut in plan.get("functions", []):
        found.append(words["as_value"] if cut.get("as_value") else words[cut.get("kind", "global")])
    for features in plan.get("node_features", {}).values():
        found += [words[f] for f in features if f in words]
    if plan.get("dynamic_params"):
        found.append(words["dynamic_params"])
    return list(dict.fromkeys(found))


def _join(items: list[str]) -> str:
    """The first two, which a title has room for: "a local function and an If"."""
    return " and ".join(items[:2])


def _died_in_pass(finding: dict) -> str | None:
    """The pass a worker died in, where its breadcrumb said (judge.Judge._death)."""
    return finding.get("extra", {}).get("died_in", {}).get("pass")


def _subject(finding: dict, dialect: str) -> str:
    """The pass to blame: the one whose output is ill-formed or that raised (the dialect's
    autodiff, for the gradient oracle's), or the minimal sequence after which the program
    breaks."""
    extra = finding.get("extra", {})
    if finding["stage"] == "passes" and extra.get("failed_pass") == GRADIENT_PASS:
        return dialect_info(dialect).gradient_support().autodiff_pass(extra.get("config") or {})
    names = extra.get("pass_names") or []
    died_in = _died_in_pass(finding)
    if died_in:  # the worker said which pass it was in: that one, not the sequence
        return died_in
    # a pass TVM runs inside the blamed one that fails alike alone is the one at fault (the
    # message and the reproducer name the pass of the sequence: a title has no room for both
    # and TVM's error, "MutateOpsForTraining (in DecomposeOpsForTraining) crashes" says no more)
    if extra.get("innermost_pass") and (extra.get("blamed_pass") or finding["stage"] == "passes"):
        return extra["innermost_pass"]
    if extra.get("blamed_pass"):
        return extra["blamed_pass"]
    if finding["stage"] == "passes" and names:
        return names[-1]
    return phrases()["sequence"].join(names)


def _error_phrase(finding: dict) -> str:
    errors, extra = phrases()["errors"], finding.get("extra", {})
    if finding["kind"] == "hang":
        return errors["hang"]
    if extra.get("signal") and finding["stage"] == "worker":
        return errors["signal"].format(signal=extra["signal"])
    exc_type = extra.get("exc_type", "")
    return errors.get(exc_type, errors["default"].format(exc_type=exc_type or "an error"))


def _violation_values(violation: dict) -> dict:
    said = phrases()["violations"].get(violation["kind"], {"phrase": violation["kind"].replace("-", " "),
                                                          "detail": "{detail}"})
    return {"violation": said["phrase"].format(**violation), "violation_detail": said["detail"].format(**violation)}


def _stage_phrase(finding: dict, situation_: Situation) -> str:
    stages = phrases()["stages"]
    said = stages.get(finding["stage"], stages["default"])
    which = "after_pass" if situation_ is Situation.BREAKS_AFTER_PASSES else "valid"
    phrase = said[which].format(stage=finding["stage"], signal=finding.get("extra", {}).get("signal") or "a signal")
    # where it matters: a failure on a target other than the CPU may be that target's (not
    # one that fails alike on llvm: campaign.target_independence)
    extra = finding.get("extra", {})
    config = extra.get("config")
    if (config and _failed_in(finding) in ("build", "load", "run") and target_kind(config["target"]) != "llvm"
            and not extra.get("target_independent")):
        phrase += f" on {target_label(config['target'])}"
    return phrase


def _failed_in(finding: dict) -> str:
    """The stage a finding failed in: a dead worker's is where its breadcrumbs say it died
    (extra.died_in; its configuration is then the one it died in)."""
    if finding["stage"] == "worker":
        return finding.get("extra", {}).get("died_in", {}).get("stage", "worker")
    return finding["stage"]


def _values(finding: dict, graph, plan: dict | None, dialect: str, situation_: Situation) -> dict:
    """What a template's placeholders say about this finding ("" where nothing)."""
    extra = finding.get("extra", {})
    violation = extra.get("violation") or {}
    result = _RESULT.search(finding["message"])
    if result and graph is not None and graph.operators and result.group(1) not in {n.op for n in graph.operators}:
        result = None  # a result site of the program as generated: the reduced one has no such operator
    alone = (extra.get("keyed_as") or {}).get("operator")
    values = {"pass": _subject(finding, dialect), "ops": _ops(graph, finding["message"], extra.get("needs"), alone),
              "features": _join(plan_features(plan, dialect)),
              "op": violation.get("op") or (result.group(1) if result else ""),
              "op_code": operator_at_fault(finding, graph),
              "dtype": result.group(2) if result else violation.get("dtype", ""),
              "error": _error_phrase(finding), "stage": _stage_phrase(finding, situation_),
              "config": _config_phrase(extra.get("config")), "complaint": "",
              "signal": extra.get("signal") or "",
              # the pass inside the build that raised (worker: the reply's "failed_pass")
              "build_pass": extra.get("failed_pass", "") if finding["stage"] == "build" else ""}
    if violation:
        values.update(_violation_values(violation))
    return values


def _config_phrase(config: dict | None) -> str:
    return f"{config['name']} on {target_label(config['target'])}" if config else ""


def _detail(finding: dict, values: dict, situation_: Situation) -> str:
    if situation_ is Situation.SILENT_ACCEPTANCE:
        return values.get("violation_detail", "")
    if situation_ is Situation.WRONG_GRADIENT:
        what = GradientDiffers.of(_reduced_signature(finding))
        return phrases()["gradient_differs"].get(what.value, "") if what else ""
    if situation_ in (Situation.WRONG_RESULT, Situation.WRONG_RESULT_AFTER_PASSES, Situation.WRONG_RESULT_ELSEWHERE,
                      Situation.HANG, Situation.HANG_AFTER_PASSES):
        return ""
    error = message_error(finding)
    if finding["stage"] == "worker" and not finding.get("extra", {}).get("exc_type"):
        # the process died: the signal is in the head; a broken program's detail says what was broken
        return values.get("violation_detail", "") or ""
    names = tuple(n for n in (values["pass"], values["op"], *finding.get("extra", {}).get("pass_names", [])) if n)
    said = essence(full_error(error, finding.get("detail", "")), names)
    return "" if said == values["error"] else said  # a bare AssertionError, named in the head already


def _reduced_signature(finding: dict) -> str:
    """A wrong result's signature as its reduced program shows it, where its root key says
    (reducer.root_key_of): a reduction keeps a wrong result's kind and oracle only, so a
    program first seen with a gradient of the wrong shape may shrink to one whose values
    differ (a default Relax campaign, seed 41: where's broadcast and cumsum's exclusive,
    the latter kept and titled "has the wrong shape")."""
    key = finding.get("extra", {}).get("root_key") or ""
    if key.startswith("root|wrong-result|"):
        return key.removeprefix("root|")
    return finding["signature"]


def _complaint(detail: str, plan: dict | None, dialect: str) -> str:
    """What an ill-formedness complaint means in the reduced program (titles.yaml: complaints)."""
    features = set(plan_features(plan, dialect))
    words = phrases()["features"][dialect]
    for rule in phrases()["complaints"]:
        wanted = rule.get("feature")
        found = re.search(rule["match"], detail)
        if found and (wanted is None or words[wanted] in features):
            return rule["says"].format(None, *found.groups())  # "{1}": what the rule's first group matched
    return ""


_DETAIL_SLOT = re.compile(r"\s*\(\{detail\}\)|:\s*\{detail\}|\s*\{detail\}")


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


# where a detail may be cut without cutting a thought short, best first: after a
# sentence, before a contrast, before a colon, bracket or comma
_CLAUSE_ENDS = (re.compile(r"\.\s"), re.compile(r";\s|,?\s(?=but\b|however\b)"), re.compile(r":\s|\s\(|,\s"))
MIN_WORDS = 4   # a detail cut inside a clause keeps at least this many words, or goes


def _balanced(text: str) -> bool:
    return text.count("(") == text.count(")") and text.count("[") == text.count("]") and text.count("`") % 2 == 0


def _clause_cut(text: str, room: int) -> str:
    """The longest run of whole clauses of `text` within `room` characters, from the best
    kind of clause end that leaves one at least half the room long; "" if none does."""
    for ends in _CLAUSE_ENDS:
        heads = [text[:m.start()] for m in ends.finditer(text)]
        fitting = [h for h in heads if len(h) <= room and _balanced(h)]
        if fitting and len(fitting[-1]) >= min(MIN_DETAIL, room // 2):
            return fitting[-1]
    return ""


_DANGLING = {"a", "an", "the", "of", "to", "for", "in", "on", "and", "or", "but", "as", "at", "by", "with",
             "is", "be", "than", "that", "which", "from", "must", "should", "not", "either"}


def _word_cut(text: str, room: int) -> str:
    """Whole words of `text` and " ..." within `room`, no connective or open bracket last;
    "" where fewer than MIN_WORDS words would be left."""
    words = text[:room - len(ELLIPSIS) + 1].split(" ")[:-1]
    while words and (words[-1].lower().strip(",:;") in _DANGLING or not _balanced(" ".join(words))):
        words.pop()
    kept = " ".join(words).rstrip(",:;")
    return kept + ELLIPSIS if len(words) >= MIN_WORDS else ""


def shorten_detail(text: str, room: int) -> str:
    """`text` in at most `room` characters: whole clauses where they fit, else whole
    words and " ..."; "" when not even that fits."""
    if len(text) <= room:
        return text
    return _clause_cut(text, room) or _word_cut(text, room)


def _render(template: str, values: dict, detail: str, width: int, least: int) -> str | None:
    """The template filled in within `width`, the detail shortened to fit; None where its
    head leaves less than `least` characters for the detail."""
    if not detail or "{detail}" not in template:
        return _DETAIL_SLOT.sub("", template).format(**values)
    before, after = template.split("{detail}", 1)
    before, after = before.format(**values), after.format(**values)
    room = width - len(before) - len(after)
    if room < least:
        return None
    short = shorten_detail(detail, room)
    # no whole word of the detail fits: a shorter head that keeps some of TVM's error is
    # better (the caller's last resort drops the detail)
    return before + short + after if short else None


def title(finding: dict, graph, info, plan: dict | None = None, width: int = TITLE_WIDTH) -> str:
    """`[Bug][Relax] ToMixedPrecision crashes on a local function: Expected TensorType, but
    got R.Callable`: from the reduced program (`graph`, its lowering `plan`) and the
    finding, at most `width` characters, never cut inside a word."""
    prefix = f"[Bug][{info.name.capitalize()}] "
    situation_ = situation(finding)
    values = _values(finding, graph, plan, info.name, situation_)
    detail = _detail(finding, values, situation_)
    if situation_ is Situation.ILL_FORMED_OUTPUT:
        values["complaint"] = _complaint(detail, plan, info.name)
    usable = [t for t in phrases()["templates"][situation_.value]
              if all(values.get(name) for name in _fields(t) - {"detail"})]
    # a head that leaves room for the whole detail, else for its start, else the first head
    # that fits without it, else the most compact; what was broken is said whole or not at
    # all ("declared [6, 3]" alone would mislead)
    whole = situation_ is Situation.SILENT_ACCEPTANCE or detail == values.get("violation_detail")
    # the operator whose code raised says more than the end of TVM's error: its heads first
    for template in [t for t in usable if "op_code" in _fields(t)]:
        said = _render(template, values, detail, width - len(prefix), min(len(detail), MIN_DETAIL))
        if said is not None:
            return prefix + said
    for least in (len(detail),) if whole else (len(detail), min(len(detail), MIN_DETAIL)):
        for template in usable:
            said = _render(template, values, detail, width - len(prefix), least)
            if said is not None:
                return prefix + said
    for template in usable:
        head = _DETAIL_SLOT.sub("", template).format(**values)
        if len(prefix) + len(head) <= width:
            return prefix + head
    last = usable[-1] if usable else "{ops}: {detail}"
    # no head fits even without the detail (a long sequence of passes): cut, as it must be
    return shorten(prefix + _DETAIL_SLOT.sub("", last).format(**values), width)
