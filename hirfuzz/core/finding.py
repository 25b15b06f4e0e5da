"""A finding and its signature: what deduplicates findings (no TVM, no dialect).

A finding's signature keys a crash on its kind, stage, exception type, deepest TVM source
frame and normalised message (for a TVM check, its condition), or on the signal; and a
wrong result on the oracle. The same signature is reported once and counted.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field

from ..breadcrumbs import PREFIX as BREADCRUMB

_FRAME = re.compile(r'File "[^"]*?/src/([^"]+)", line \d+, in (.+)')
# a TVM check is known by its condition: what follows "is false:" names the IR at hand
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b:?")
_CHECK = re.compile(r"(Check failed: .*?)(?: is false\b.*)?(?:$|\n)")


@dataclass
class Finding:
    kind: str                 # crash, hang, wrong-result
    oracle: str               # crash or reference
    stage: str                # lower, well_formed, build, run, or worker
    signature: str
    message: str              # one line, for the screen
    detail: str = ""          # full exception text, log tail or mismatch description
    case: int = -1
    hits: int = 1
    path: str = ""
    confirmed: bool = False
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


# --- signatures -------------------------------------------------------------------------------

def headline(message: str, default: str = "") -> str:
    """The line of an error message that says what went wrong. TVM 0.19 with TVM_BACKTRACE
    puts its C++ backtrace first ("Traceback (most recent call last):", frames) and the
    error last; other messages say it first."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    if not lines:
        return default
    if not lines[0].startswith("Traceback"):
        return lines[0]
    # the exception's own line ("TVMError: LLVM module verification failed ..."), which
    # may be followed by detail lines; the last line when there is none
    raised = [ln for ln in lines if _RAISED.match(ln)]
    return raised[-1] if raised else lines[-1]


def error_line(exc_type: str, message: str) -> str:
    """"ExcType: what went wrong", once (TVM's messages often name their type already)."""
    line = headline(message, exc_type)
    return line if line.startswith(f"{exc_type}:") or line == exc_type else f"{exc_type}: {line}"


# a type and the higher-order autodiff's reverse-mode type of it, (T, ref(T)), mismatched (TVM
# 0.19 ReverseADType keeps a function type's return type: relay/gradients.py), either order
_REVERSED_PAIR_MISMATCH = re.compile(r"`\((?P<a>[^`]*), ref\((?P=a)\)\)` does not match `(?P=a)`"
                                     r"|`(?P<b>[^`]*)` does not match `\((?P=b), ref\((?P=b)\)\)`")
_REVERSED_PAIR_KEY = "`T` does not match `(T, ref(T))`"


def normalize_message(message: str) -> str:
    text = message.strip()
    check = _CHECK.search(text)
    line = check.group(1) if check else headline(text)
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    # a fused kernel is named after the ops fused into it, and the executor that compiled it
    # (Relay's VM, graph executor, interpreter): one bug, however they are fused and run
    line = re.sub(r"\b(vm_mod|tvmgen_default|intrp)_fused_\w+", "FUSED", line)
    line = re.sub(r"\b(lv|gv|x|c|v)\d+\b", "V", line)
    # a symbolic size the lowering names in a function other than main carries the function's
    # name (n4_f1, n4_local1): the same size, whichever function declares it
    line = re.sub(r"\b(n\d+)_(f|local)\d+\b", r"\1", line)
    # Relay's dynamic dimension (relay.Any(), printed `?`) is a size like any other: a failure
    # the same program shows with the `?` made a number is the same failure, so reduction can
    # find that the finding does not need the dynamic shape (bench30 relay seed 32 0010, a
    # ToMixedPrecision mismatch titled "on a dynamic shape" that the static program shows too)
    line = re.sub(r"(?<=[(\[ ])\?(?=[,)\]])", "0", line)
    line = re.sub(r"\d+", "N", line)
    line = _first_diagnostic(re.sub(r"\s+", " ", line))
    # one mismatch whatever the type and the order; before the cut, which a long type
    # would fall across
    line = _REVERSED_PAIR_MISMATCH.sub(_REVERSED_PAIR_KEY, line)
    return line[:200]


def _first_diagnostic(line: str) -> str:
    """A Relay type error as its first diagnostic alone (protocol.error_reply joins them with
    " | "): TVM 0.19's type checker says one per place it fails, so a program with two
    closures under the higher-order autodiff had another signature than one with one, and
    a reduction could drop neither (/tmp/r34, seed 1). The first is where it failed first."""
    if not line.startswith(f"{RELAY_TYPE_ERROR}: "):
        return line
    return line.split(" | ")[0]


def top_tvm_frame(trace: str) -> str:
    frames = _FRAME.findall(trace or "")
    if not frames:
        return ""
    path, fn = frames[-1]
    return f"{path}:{fn.strip()}"


# any frame of a Python traceback, and where TVM's own Python package lies in its path
_ANY_FRAME = re.compile(r'File "([^"]+)", line \d+, in (.+)')
_TVM_PACKAGE = re.compile(r"/(tvm/.+\.py)$")
# TVM's Python that only passes a C++ error on (its FFI), which says nothing of where it arose
_FFI_LAYER = re.compile(r"^tvm/(_ffi|ffi|runtime)/")
# TVM's Python helpers that raise where their caller gives them what they cannot take
# (get_const_int of a symbolic extent): the fault is the caller's
_ARGUMENT_CHECKERS = {"tvm/topi/utils.py"}


def tvm_python_frame(trace: str) -> str:
    """Where in TVM's own Python an exception was raised ("tvm/topi/nn/elemwise.py:prelu"),
    where the traceback's last frame is there; "" where it is elsewhere (a C++ header, the
    FFI passing a C++ error on, hirfuzz). A helper that checks what it is given
    (_ARGUMENT_CHECKERS) says so for its caller: the frame is its caller's, the helper after
    it ("tvm/topi/nn/elemwise.py:prelu>get_const_int"). Why: topi's get_const_int raised for
    prelu's and for slice_scatter's symbolic sizes, two faults keyed as one (bench25 relax
    seed 13)."""
    frames = [(_TVM_PACKAGE.search(path), fn.strip()) for path, fn in _ANY_FRAME.findall(trace or "")]
    if not frames:
        return ""
    package, fn = frames[-1]
    if not package or _FFI_LAYER.match(package.group(1)):
        return ""
    if package.group(1) not in _ARGUMENT_CHECKERS or len(frames) < 2:
        return f"{package.group(1)}:{fn}"
    caller, caller_fn = frames[-2]
    if not caller or _FFI_LAYER.match(caller.group(1)) or caller.group(1) in _ARGUMENT_CHECKERS:
        return f"{package.group(1)}:{fn}"
    return f"{caller.group(1)}:{caller_fn}>{fn}"


# the innermost frame of a backtrace TVM 0.19 prints without file names ("  0: tvm::codegen::
# CodeGenLLVM::CreateIntrinsic(tvm::tir::CallNode const*)"), where it is a target's code
# generator: passes that evaluate constants (Relay's FoldConstant, DynamicToStatic) build them
# with it, so its failure is the code generator's whichever pass or build ran it. Other
# innermost frames of such a backtrace are often the error's reporter (DiagnosticContext::
# Render, TVMThrowLastError), which says nothing of where the fault is.
_CODEGEN_FRAME = re.compile(r"^\s*0: (tvm::codegen::[\w:]+)\(", re.M)


# an innermost frame in topi's C++ (header-only: include/tvm/topi/), which the signature's
# frame, from src/ alone, leaves out: an op's C++ compute raising on what legalization gave it
_TOPI_HEADER = re.compile(r"/include/(tvm/topi/[^\"]+\.h)$")


def topi_frame(trace: str) -> str:
    """The topi function a traceback's last frame is in ("tvm/topi/transform.h:tvm::te::Tensor
    tvm::topi::reverse_sequence(...)"), or "". Why: reverse_sequence's check on a symbolic batch
    was keyed on the pass that legalized it, FoldConstant in one finding, the build's
    LegalizeOps in another (bench26 relax seed 13 0016 + 0026)."""
    frames = _ANY_FRAME.findall(trace or "")
    if not frames:
        return ""
    path, fn = frames[-1]
    header = _TOPI_HEADER.search(path)
    return f"{header.group(1)}:{fn.strip()}" if header else ""


def placed_frame(frame: str, detail: str) -> str:
    """Where root_key places a crash: its signature's C++ frame of src/, else where TVM's
    Python raised it (topi's prelu in LegalizeOps, run as a pass or inside relax.build: one
    fault in two stages), or topi's C++, or the code generator; "" where none says."""
    return frame or tvm_python_frame(detail) or topi_frame(detail) or codegen_frame(detail)


def in_operator_code(signature: str, detail: str) -> bool:
    """Whether a crash is placed in an operator's own implementation, TVM's topi (its Python
    or its C++ headers), as root_key places it (placed_frame): that operator's fault on the
    shapes it was given, which a user can give it too, whatever pass gave them."""
    return bool(operator_code_frame(signature, detail))


def operator_code_frame(signature: str, detail: str) -> str:
    """Where in topi a crash is placed, as root_key places it (placed_frame):
    "tvm/topi/nn/elemwise.py:prelu>get_const_int"; "" where it is placed elsewhere."""
    parts = signature.split("|")
    if "crash" not in parts:
        return ""
    frame = (parts[parts.index("crash") + 3:] or [""])[0]  # after the stage and the exception
    placed = placed_frame(frame, detail)
    return placed if "tvm/topi/" in placed else ""


def codegen_frame(trace: str) -> str:
    """The code generator's function a TVM 0.19 backtrace's innermost frame names, or ""."""
    found = _CODEGEN_FRAME.search(trace or "")
    return f"cpp:{found.group(1)}" if found else ""


def crash_signature(stage: str, exc_type: str, message: str, trace: str) -> str:
    return "|".join(["crash", stage, exc_type, top_tvm_frame(trace), normalize_message(message)])


# what an ill-formedness complaint names that is the program's own, not the problem's: a
# variable or function ("Var lv3 is not defined.", 'GlobalVar I.GlobalVar("f2") is not defined.')
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_NAMED_VAR = re.compile(r"\b(Var|DataflowVar|GlobalVar|variable|function)\s+(?:I\.GlobalVar\([^)]*\)|[^\s.,:;]+)")


# a pass's output whose public function returns a type contradicting its input's (the Relax
# dialect's check, dialects/relax/returns.py, which says it in these words): keyed on what
# changed (its shape, dtype, rank or structure), not on the program's types
RETURNS_CHANGED = "a pass changed the type a public function returns"


def ill_formed_key(message: str) -> str:
    """What a well-formedness check complains of, with the program's own names left out, so
    that variants of one ill-formed output (another variable, another function) are one key;
    the operators it names stay."""
    line = normalize_message(message)
    if line.startswith(RETURNS_CHANGED):
        return line.split(":", 1)[0]
    line = _QUOTED.sub('"?"', line)
    return _NAMED_VAR.sub(r"\1 ?", line)


def ill_formed_signature(blamed_pass: str, message: str) -> str:
    """A pass's ill-formed output is keyed on that pass and what the check says is wrong."""
    return "|".join(["ill-formed", blamed_pass, ill_formed_key(message)])


ROOT = "root"  # what a root key starts with: never a signature's start
# a shape in a normalised message ("Tensor[(N, N, N), floatN]"): one failure at any rank
_SHAPE = re.compile(r"[(\[](?:N, )*N,?[)\]]")
# one dimension a message quotes, a constant (T.int64(3), normalised) or a symbolic size (n2):
# the check that quotes it is the place, whichever side is symbolic (bench30 relax seed 31
# 0034 and 0037, collapse_sum_like's CheckCollapseShape with "data n2, target 2" and
# "data 3, target n3": one root cause filed twice)
_DIMENSION = re.compile(r"\bT\.intN\(shape\)|\bnN\b")
ROOT_MESSAGE = 150  # characters of a message a root key keeps
# an IR node a message prints, to its end: the program's, not the fault's (Relay 0.19's
# ToMixedPrecision: "Unsupported op type in CallNode: CallNode(I.GlobalVar("get_f1"), ...)",
# or "CallNode(fn () {...", whatever the call's callee is a call of)
_IR_NODE = re.compile(r"\b[A-Z]\w*Node\(.*$", re.S)
# a math intrinsic the code generator has no lowering for: TVM's default rule for them
# (src/target/intrin_rule.h, DispatchPureExtern<FloatSuffix>) names an extern function for
# float32 and float64 only and leaves any other float (float16) to the code generator, which
# knows none of acos, acosh, atan, atanh...: one gap, whichever function (Relay 0.19,
# ToMixedPrecision's float16 acos, acosh, atan and atanh in bench17 to bench21)
_UNKNOWN_INTRINSIC = re.compile(r"unknown intrinsic Op\(tir\.\w+\)")


# Relay's type checker complaining of two tensor types of one (normalised) shape: a dtype mismatch
_SAME_SHAPE_MISMATCH = re.compile(r"`Tensor\[(\((?:N, )*N,?\)), (\w+)\]` does not match `Tensor\[\1, (\w+)\]`")
_DTYPE_MISMATCH = re.compile(r"`(\w+)` does not match `(\w+)`")  # two scalar types, or dtypes as above


def _dtype_complaint(complaint: str, said: str = "") -> str:
    """An ill-formed module's complaint as its root key keeps it: the first of Relay's type
    checker's complaints only (the signature's cut falls further in as shapes grow), and a
    mismatch of two tensor types of one shape as the mismatch of their dtypes. The rank is
    the program's, not TVM's: Relay ToMixedPrecision (TVM 0.19) leaves a function's float16
    result where a caller declared float32 whatever the rank, a scalar (printed as a bare
    `floatN`) too. What tells causes apart stays: the pass, the dtypes (a uintN that became
    floatN is another fault: an integer conv, dense or batch_matmul given a float out_dtype),
    and the shapes of a mismatch whose shapes differ. Where the finding's message as said
    (`said`, its numbers not normalised) names the two dtypes, a 16-bit float stays apart
    from a wider one (`halfN`): a float16 result where float64 was declared is a pass's
    conversion left unreconciled, a float32 one where float64 was is another fault (calls
    kept at full precision cast float64 down to float32). float16 and bfloat16 are one:
    which the pass converted to is its drawn argument (mixed_precision_type)."""
    first = _SAME_SHAPE_MISMATCH.sub(r"`\2` does not match `\3`", complaint.split(" | ")[0])
    widths = _mismatched_dtypes(said)

    def keyed(m: re.Match) -> str:
        pair = [_float_kind(d, widths[i] if widths else None) for i, d in enumerate(m.group(1, 2))]
        # which side Relay names first is the order it unified them in, not another fault
        return "`{}` does not match `{}`".format(*sorted(pair))
    return _DTYPE_MISMATCH.sub(keyed, first, count=1)


# the first two types Relay's type checker could not match, as the finding's message says them
_SAID_MISMATCH = re.compile(r"In particular `([^`]*)` does not match `([^`]*)`")
_LAST_WORD = re.compile(r"(\w+)\]?$")


def _mismatched_dtypes(said: str) -> tuple[str, str] | None:
    """The dtypes (last word of each type: `Tensor[(2, 3), float16]`, `float64`) of the
    first mismatch the message names, or None."""
    found = _SAID_MISMATCH.search(said or "")
    if not found:
        return None
    words = [_LAST_WORD.search(t) for t in found.group(1, 2)]
    return (words[0].group(1), words[1].group(1)) if all(words) else None


def _float_kind(dtype: str, said: str | None = None) -> str:
    """A normalised dtype as a mismatch's key keeps it: bfloatN as floatN, and a float that
    was said to be 16 bits wide as halfN."""
    if dtype not in ("floatN", "bfloatN"):
        return dtype
    return "halfN" if said in ("float16", "bfloat16") else "floatN"


# --- Relay's type checker and ToMixedPrecision ----------------------------------------------------

RELAY_TYPE_ERROR = "DiagnosticError"  # what Relay's type checker raises
MIXED_PRECISION = "ToMixedPrecision"
# BroadcastRel's own words for a dtype mismatch, as said and as normalised
_BROADCAST_MISMATCH = re.compile(r"data types (\w+) and (\w+) do not match in BroadcastRel")
_CHECKER_MISMATCH = "The Relay type checker is unable to show the following types match. In particular `{}` does not match `{}`"
# TIR arithmetic's words for one (ToMixedPrecision folds the expressions it makes): the
# dtypes as a signature has them
_ARITH_MISMATCH = re.compile(r"Check failed: x->dtype == y->dtype \((\w+) vs\. (\w+)\)")
_FLOATS = ("halfN", "floatN", "bfloatN")
STALE_FLOAT = "a float type left stale at: "  # a root key's complaint, the construct following


def ill_formed_root(blamed_pass: str, complaint: str, said: str = "", construct: str = "") -> str:
    """The root key of a module a pass left ill-formed (ill-typed): the pass and the complaint
    (_dtype_complaint). Relay's ToMixedPrecision (TVM 0.19) has two faults that show as one
    dtype mismatch or another, keyed apart by what the mismatch holds:
    - an integer where a float was made: an integer conv, dense or batch_matmul with a void
      out_dtype given the mixed type as its out_dtype (ModifyAttrsOutputDType sets it whatever
      the input dtype). One fault whether the integer is signed or not (the program's), and
      whether the type checker says it or BroadcastRel (the consumer's), and wherever it sits;
    - two floats: a type left stale, which the construct that carries it tells apart
      (`construct`, stale_type_carrier): an If's let binding (the Let handler annotates the
      variable with its value's type before the value's own is known again), a let-bound
      closure (which fails so even where nothing calls it: bench27 probe), a call to a
      global function (returned unchanged, its arguments not cast to the callee's
      parameters, which the function pass converts on its own), a function literal's call
      (its arguments cast to float32 whatever its parameters declare). Keyed on the
      construct alone where it is known; on the two dtypes (halfN apart) where not."""
    if blamed_pass != MIXED_PRECISION:
        return f"{ROOT}|ill-formed|{blamed_pass}|{_dtype_complaint(complaint, said)}"
    keyed = _dtype_complaint(_as_checker_says(complaint), _as_checker_says(said))
    found = _DTYPE_MISMATCH.search(keyed)
    if not found:
        return f"{ROOT}|ill-formed|{blamed_pass}|{keyed}"
    pair = sorted("intN" if d == "uintN" else d for d in found.group(1, 2))
    if construct and all(d in _FLOATS for d in pair):
        # which floats meet is the program's: the converted op's (float16), an accumulating
        # op's (mean: float32), a full-precision input's (float64); the construct is the fault's
        return f"{ROOT}|ill-formed|{blamed_pass}|{STALE_FLOAT}{construct}"
    keyed = keyed[:found.start()] + "`{}` does not match `{}`".format(*pair) + keyed[found.end():]
    return f"{ROOT}|ill-formed|{blamed_pass}|{keyed}"


def _as_checker_says(text: str) -> str:
    """BroadcastRel's dtype mismatch as Relay's type checker words one."""
    return _BROADCAST_MISMATCH.sub(lambda m: _CHECKER_MISMATCH.format(m[1], m[2]), text or "")


def _integer_made_half(message: str) -> str | None:
    """A crash of ToMixedPrecision in TIR arithmetic between an integer and a 16-bit float, as
    the type checker would word it (one fault with the integer op given the mixed type as its
    out_dtype: ill_formed_root), or None for any other message."""
    found = _ARITH_MISMATCH.search(message)
    if not found or not any(d.startswith(("int", "uint")) for d in found.group(1, 2)):
        return None
    return f"{RELAY_TYPE_ERROR}: " + _CHECKER_MISMATCH.format(*found.group(1, 2))


# passes that, run before ToMixedPrecision, change what carries a stale type
_LIFTS_CLOSURES = "LambdaLift"           # let-bound closures become global functions
_MAKES_LITERALS = ("FuseOps",)           # each fused group becomes a called function literal
_ETA_EXPAND = "EtaExpand"                # expand_global_var: a global's call goes through a literal
_DROPS_LETS = "ToGraphNormalForm"        # a let-bound If becomes a plain one, which ToMixedPrecision handles


def stale_type_carrier(lowering: dict | None, graph: dict | None, steps: list[dict]) -> str:
    """What in a reduced program carries the type ToMixedPrecision leaves stale, read from
    its lowering plan (core.plan) and the passes run before ToMixedPrecision: "function
    literal" (FuseOps or EtaExpand of a global made one), "global call" (a global function
    that computes a float, or a closure LambdaLift lifted), "let-bound closure", "let
    binding" (a let-bound If), or "" where it has none of these. A global function of
    integers only carries no float type, nor a stale one.

    A closure and an If are two faults: a let-bound closure fails with nothing calling it,
    an If with no closure near it (TVM 0.19, hand-written probes); keyed as one, an If's
    finding held a campaign's closure failures as merged members and none was filed
    apart (bench27 relay seed 17, grad40 0002: three of six members)."""
    plan = (lowering or {}).get("plan") or {}
    floats = _float_nodes(graph)
    cuts = plan.get("functions") or []
    has = {"global": any(c.get("kind") == "global" and floats & set(range(c["start"], c["end"] + 1)) for c in cuts),
           "closure": any(c.get("kind") == "local" for c in cuts),
           "if": any({"if_shape", "if_prim"} & set(f) for f in (plan.get("node_features") or {}).values()),
           "literal": False}
    for step in steps:
        name = step.get("name")
        if name == MIXED_PRECISION:
            break
        if name == _LIFTS_CLOSURES and has["closure"]:
            has["closure"], has["global"] = False, True
        elif name in _MAKES_LITERALS:
            has["literal"] = True
        elif name == _ETA_EXPAND and has["global"] and (step.get("args") or {}).get("expand_global_var"):
            has["global"], has["literal"] = False, True
        elif name == _DROPS_LETS:
            has["if"] = False
    for construct, label in (("literal", "function literal"), ("global", "global call"),
                             ("closure", "let-bound closure"), ("if", "let binding")):
        if has[construct]:
            return label
    return ""


def _float_nodes(graph: dict | None) -> set[int]:
    """The ids of a graph's (core.graph JSON) nodes that compute a float or read one: a
    function's float parameter is a type a caller's call can leave stale, as is its result."""
    nodes = {node["id"]: node for node in (graph or {}).get("nodes", [])}

    def is_float(node_id: int, index: int) -> bool:
        outputs = nodes[node_id].get("outputs", []) if node_id in nodes else []
        return index < len(outputs) and "float" in outputs[index].get("dtype", "")
    return {node_id for node_id, node in nodes.items()
            if any(is_float(node_id, i) for i in range(len(node.get("outputs", []))))
            or any(is_float(*ref) for ref in _refs(node.get("inputs", [])))}


def _refs(inputs: list) -> list[tuple[int, int]]:
    """The (node, output) references of a graph node's inputs, a variadic input's each."""
    refs = []
    for item in inputs:
        if len(item) == 2 and all(isinstance(x, int) for x in item):
            refs.append((item[0], item[1]))
        else:
            refs.extend(_refs(item))
    return refs


# --- a dead worker's last words -----------------------------------------------------------------

# what a dying process says of why, where it says anything (a segfault says nothing): a failed
# C assert, glibc's "prog: /path/File.cpp:48: void f(): Assertion `expr' failed." (LLVM and
# TVM built with assertions abort so); LLVM's report_fatal_error; a TVM check; and a TVM error
# that escaped to std::terminate, whose what() ends in "File "/path/x.cc", line N" and the error
_ASSERTION = re.compile(r"(?P<path>[^\s:]+):\d+: (?P<function>.+?): Assertion `(?P<expr>.*)' failed\.")
_LLVM_ERROR = re.compile(r"LLVM ERROR: (?P<message>.+)")
_PATH_ON_LINE = re.compile(r"(?P<path>[^\s:\"]+\.(?:cc|cpp|c|h|hpp)):\d+:")
_FRAME_PATH = re.compile(r'File "([^"]+)", line \d+')  # a frame of a TVM error's what()
_UNCAUGHT = "terminate called after throwing an instance of"
_ERROR_LINE = re.compile(r"^(?P<line>[A-Za-z_][\w.:]*(?:Error|Exception): .+)")
_REQUEST_START = f"{BREADCRUMB}{{}}"  # a request's first breadcrumb, an empty one


def _file_name(path: str) -> str:
    """A source file as a key keeps it: its name, not where the build kept it."""
    return path.rsplit("/", 1)[-1]


def _last_request(log: str) -> list[str]:
    """The lines of a worker's log since its last request began (a worker's log holds the
    cases it answered before, whose output says nothing of this death)."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == _REQUEST_START]
    return lines[starts[-1] + 1:] if starts else lines


def _fatal_of_line(line: str, before: list[str], uncaught: bool) -> tuple[str, str] | None:
    """(where, what) of one line of a dying process's output, if it is a fatal one."""
    assertion = _ASSERTION.search(line)
    if assertion:
        return (f"{_file_name(assertion['path'])}:{assertion['function']}",
                f"Assertion `{assertion['expr']}' failed.")
    llvm = _LLVM_ERROR.search(line)
    if llvm:
        return "LLVM ERROR", llvm["message"]
    check = _CHECK.search(line)
    error = _ERROR_LINE.match(line.strip()) if uncaught else None
    if not check and not error:
        return None
    # the file names the place: on the check's own line (a log line's "/path/x.cc:57:"), or
    # the last frame of the what() that an uncaught error printed before its error line
    on_line = _PATH_ON_LINE.search(line)
    frames = [m.group(1) for m in map(_FRAME_PATH.search, before) if m]
    path = on_line["path"] if on_line else (frames[-1] if frames else "")
    return _file_name(path), (check.group(1) if check else error["line"])


def fatal_line(log: str) -> tuple[str, str] | None:
    """Where and what a dead worker's log (a death finding's detail) says it died of, the
    last such line of its last request: ("LLVMContextImpl.cpp:llvm::LLVMContextImpl::~LLVMContextImpl()",
    "Assertion `TrailingDbgRecords.empty() && ...' failed."), normalised (file names, not
    paths; no line numbers, numbers or addresses); None where it said nothing fatal (a
    segfault, a floating-point exception)."""
    lines = _last_request(log)
    uncaught = any(_UNCAUGHT in line for line in lines)
    for index in range(len(lines) - 1, -1, -1):
        found = _fatal_of_line(lines[index], lines[:index], uncaught)
        if found:
            where, what = found
            # numbers and addresses dropped, as from a crash's message
            return normalize_message(where), normalize_message(what)
    return None


def death_root_key(signal: str, log: str) -> str | None:
    """A dead worker's root key: its signal (or "exit") and the fatal line its log ends with
    (fatal_line), not where it died, as a crash's frame stands for its stage: one LLVM
    assertion in two stages or after two pass sequences is one fault. None where its log
    says nothing fatal: a bare signal names no fault, and deaths of one signal in one place
    stay apart by their signatures."""
    fatal = fatal_line(log)
    if fatal is None:
        return None
    where, what = fatal
    return f"{ROOT}|crash|{signal}|{where}|{what[:ROOT_MESSAGE]}"


def pass_root_key(pass_name: str) -> str:
    """The root key of any failure of a pass whose catalog entry says its failures are one
    root cause (core.passes.PassEntry.one_root_cause)."""
    return f"{ROOT}|pass|{pass_name}|one root cause"


def narrowing_root_key(pass_name: str) -> str:
    """The root key of a failure that goes away once the run-time checks `pass_name` dropped
    are put back (reduction_steps.NarrowingCause): that pass's narrowing, wherever the
    program trips over it later."""
    return f"{ROOT}|narrowing|{pass_name}"


def lone_operator_key(pass_name: str, operator: str, construct: str = "") -> str:
    """The root key of a pass's failure (a raise, an ill-formed output, a death) on a program
    reduced to one operator, plainly lowered (no lowering plan, no mutant, which a pass may
    trip over whatever the operator): the pass and that operator, whatever the message. Such
    a program reaches one rule of the pass for that operator (ConvertLayout's InferLayoutStack, the
    decomposition of layer_norm), and one fix in it fixes every way it fails: in 34 saved
    campaigns (bench17 to bench20) the single-operator failures of a pass that keyed apart
    were ConvertLayout on stack three ways (basic_string::replace for a negative axis, Index
    -1 for axis == ndim, SIGFPE for 0-d inputs) and MutateOpsForTraining on layer_norm two
    ways (a broadcast error, a changed result shape), each one fault to the readers. What in
    the program carries a stale type (`construct`, stale_type_carrier) stays in the key."""
    return f"{ROOT}|pass-operator|{pass_name}|{operator}" + (f"|{construct}" if construct else "")


def root_keys(finding_extra: dict) -> list[str]:
    """The keys a finding joins another by: its root key, and its second key where it has
    one (extra.operator_key: a pass's failure on one operator, lone_operator_key, or another
    oracle's failure of that operator, oracles' OracleDefinition.operator_key). That second
    key only joins: a finding keyed on its message joins every other with that message,
    whatever its operator."""
    return [key for key in (finding_extra.get("root_key"), finding_extra.get("operator_key")) if key]


def pass_failed_in(finding_extra: dict, stage: str) -> str | None:
    """The pass a crash, an ill-formed output or a worker's death failed in, the innermost
    that fails alike where the worker found one; None where it failed elsewhere."""
    if stage == "worker":
        return (finding_extra.get("died_in") or {}).get("pass")
    if stage not in ("passes", "ill_formed_after_pass"):
        return None
    return (finding_extra.get("innermost_pass") or finding_extra.get("failed_pass")
            or finding_extra.get("blamed_pass"))


def failed_pass_of(extra: dict, pass_names: list[str], stage: str = "passes") -> str | None:
    """The pass a crash's root key names where no TVM frame places it: the pass that raised,
    as the worker said (extra "failed_pass": of the sequence, or inside the build; the pass
    within it that raises alike, "innermost_pass", where the worker found one, as titles
    blame it), else, in the passes stage, the one pass of a reduced sequence that holds one."""
    if extra.get("failed_pass"):
        return extra.get("innermost_pass") or extra["failed_pass"]
    return pass_names[0] if stage == "passes" and len(pass_names) == 1 else None


def root_key(signature: str, oracle_prefixes: set[str], failed_pass: str | None = None,
             detail: str = "", said: str = "", construct: str = "") -> str | None:
    """Where TVM fails, whichever program, oracle or configuration showed it: the key that
    makes findings with one root cause one finding (findings.FindingTables.join_root).

    A crash is keyed on its exception, deepest TVM frame and normalised message (its stage
    too where no TVM frame says where), not on the oracle or configuration it was seen
    under, nor on the rank of a shape it names (what a message quotes stays: "'GlobalVar'
    object has no attribute 'name'" is not another attribute's error); an ill-formed
    module on the (innermost) pass that made it and the complaint, the program's names
    left out already (ill_formed_key), a type mismatch as its dtypes whatever the rank
    (_dtype_complaint). A wrong result's signature is keyed on where the reduced program
    shows it (call with the reduced program's signature). A crash with no C++ frame is keyed
    on the frame of TVM's Python that raised it, from its traceback (`detail`), where one did;
    a type mismatch's dtypes are read as the finding's message (`said`) gives them
    (_dtype_complaint); a crash in a pass that no TVM frame places is keyed on
    `failed_pass`, the pass of the sequence that raised (or the one pass its reduced program
    needs), and where Relay's type checker raised it (a DiagnosticError), as the ill-formed
    output of that pass (ill_formed_root). A ToMixedPrecision float mismatch is keyed also
    on `construct`, what in the reduced program carries the stale type (stale_type_carrier).
    A worker's death is keyed on the fatal line its log (`detail`) ends with, where
    it has one (death_root_key); one without, or any other signature: None, and the finding
    keeps its own."""
    head, _, rest = signature.partition("|")
    if f"{head}|" in oracle_prefixes:
        signature = rest
    kind, _, rest = signature.partition("|")
    if kind == "ill-formed":
        blamed_pass, _, complaint = rest.partition("|")
        return ill_formed_root(blamed_pass, complaint, said, construct)
    if kind == "wrong-result":
        return f"{ROOT}|{signature}"
    if kind != "crash":
        return None
    parts = rest.split("|", 3)  # stage, exception, frame, message (which may hold a "|")
    if parts[0] == "worker":  # "worker", its signal, where it died
        return death_root_key(parts[1], detail) if len(parts) > 1 else None
    if len(parts) < 4:
        return None
    stage, exc_type, frame, message = parts
    frame = placed_frame(frame, detail)
    where = frame or f"stage:{stage}"  # no frame says where: the stage
    if not frame and stage == "passes" and failed_pass and exc_type == RELAY_TYPE_ERROR:
        # Relay's type checker raising at the end of a pass (a FunctionPass infers the types
        # of the module it made): the pass left an ill-typed module, as an ill-formed finding
        # says of it when the pass's own check let it through; one fault, one key (TVM 0.19
        # ToMixedPrecision's stale type of a global call shows either way)
        return ill_formed_root(failed_pass, message, said, construct)
    if not frame and stage == "passes" and failed_pass == MIXED_PRECISION and _integer_made_half(message):
        # the integer fault as TIR arithmetic meets it, while the pass folds what it made
        return ill_formed_root(failed_pass, _integer_made_half(message), _integer_made_half(said) or said, construct)
    if not frame and stage in ("passes", "build") and failed_pass:
        # no TVM frame says where: the pass that raised does, in the sequence or inside the
        # build (one fault, one key: AlterOpLayout's topk check run by hirfuzz or by relay.build),
        # and a type mismatch is keyed as an ill-formed output's is (one fault at two ranks, or
        # after another pass, is one key)
        where, message = f"pass:{failed_pass}", _dtype_complaint(message, said)
    # cut shorter than normalize_message cuts: a longer shape moved its cut further in
    message = _DIMENSION.sub("<dim>", _IR_NODE.sub("<IR>", _SHAPE.sub("(shape)", message)))
    message = _UNKNOWN_INTRINSIC.sub("unknown intrinsic Op(tir.?)", message)
    return f"{ROOT}|crash|{exc_type}|{where}|{message[:ROOT_MESSAGE]}"


def death_signature(reason: str, sig: str | None, place: str | None = None) -> str:
    """A worker's death: a hang, or a crash by its signal (or "exit") and, where the worker
    said, the place it died (breadcrumbs.Place.key: "passes:DataflowUseInplaceCalls"), so
    that deaths in different places are different findings."""
    if reason == "timeout":
        return f"hang|worker|{reason}"
    return f"crash|worker|{sig or reason}" + (f"|{place}" if place else "")


def short_id(signature: str) -> str:
    return hashlib.sha1(signature.encode()).hexdigest()[:10]
