"""What every dialect's reproducers share. TVM-free: reproducers are written in the
coordinator.

A finding gets two scripts. `repro.py` is the one a maintainer reads: the module (TVMScript
or Relay text, constants inline), its inputs, the pass, build and run lines and the check,
and nothing of hirfuzz's (no marks, no paths but a user's own pass module's). `check.py` is
hirfuzz's harness: it checks every pass's output and prints marks (`protocol.REPRO_MARK`)
saying how far it got, which the checker (campaign.verify) reads back. Both must fail the
same way before a finding is reported.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path

import numpy as np

from ..core.finding import Finding
from ..core.targets import target_kind
from ..protocol import REPEAT_RUNS, REPRO_MARK as MARK, describe_config


def source_of(module_file: Path, name: str) -> str:
    """The source text of a top-level function of a hirfuzz module, without importing it
    (it imports TVM, which the coordinator never does): reproducers copy the worker's code."""
    text = module_file.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise ValueError(f"{module_file} has no function {name}")


# a constant array of more elements than this is written as np.full, not element by element
_FULL_FROM = 8


def array_code(a: np.ndarray) -> str:
    if a.size > _FULL_FROM and np.all(a == a.flat[0]):
        return f"np.full({list(a.shape)!r}, {a.flat[0].item()!r}, dtype={a.dtype.name!r})"
    return f"np.array({a.tolist()!r}, dtype={a.dtype.name!r})"


def user_modules(config: dict) -> list[str]:
    return sorted({f"{step['import'].split(':')[0]} (from {step.get('search_dir') or 'site-packages'})"
                   for step in config.get("passes", []) if step.get("import")})


RUN_LINE = "Run: python repro.py   (exit status 0 means the bug no longer reproduces)"


def docstring(finding: Finding, config: dict, tvm_version: str | None, needs: str) -> list[str]:
    """The script's opening lines: what it shows, what it needs, how to run it (RUN_LINE)."""
    modules = user_modules(config)
    return [
        '"""hirfuzz reproducer.',
        "",
        f"Finding: {finding.kind} ({finding.oracle} oracle) at stage '{finding.stage}'",
        f"Message: {finding.message}",
        f"TVM: {tvm_version or 'unknown'}; built as: {describe_config(config)}",
        f"Needs: Python 3.10 or later, {needs} and numpy",
        *([f"Needs your pass module(s): {', '.join(modules)}; the script puts that folder on sys.path"]
          if modules else []),
        RUN_LINE,
        '"""',
    ]


USER_PASS = """

def user_pass(path, search_dir, args):
    \"\"\"A pass from the user's own module (`import:` in their pass catalog).\"\"\"
    import importlib
    if search_dir and search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    module, factory = path.split(":")
    return getattr(importlib.import_module(module), factory)(**args)
"""


# a harness runs the built program REPEAT_RUNS times (protocol.REPEAT_RUNS), each run on fresh
# input tensors and judged on its own
RUNS_LINES = [f"RUNS = {REPEAT_RUNS}  # each run judged alone: some wrong results show only on a later run"]


def data_lines(inputs: list[np.ndarray], expected: list | None, rejection: bool) -> list[str]:
    """INPUTS, EXPECTED and EXPECT_REJECTION."""
    why = "an invalid program: accepting it is the bug" if rejection else "a valid program"
    lines = [f"EXPECT_REJECTION = {rejection!r}  # {why}", *RUNS_LINES,
             "INPUTS = [", *[f"    {array_code(a)}," for a in inputs], "]"]
    if expected is None:
        return lines + ["EXPECTED = None"]
    lines.append("EXPECTED = [  # (expected value or None if not comparable, rtol, atol)")
    lines += [f"    ({array_code(value) if value is not None else 'None'}, {rtol!r}, {atol!r}),"
              for value, rtol, atol in expected]
    return lines + ["]"]


# the end of every reproducer's main(), once `runs` holds each run's results
CHECK_RESULTS = '''
    if EXPECT_REJECTION:
        print("{mark} accepted")
        return 1
    if EXPECTED is None:
        print("{mark} ok")
        return 0
    for run, outputs in enumerate(runs, 1):
        failed = False
        for i, (got, (want, rtol, atol)) in enumerate(zip(outputs, EXPECTED)):
            if want is None:
                continue  # not comparable: rounding may have been amplified
            if got.dtype != want.dtype or got.shape != want.shape:
                print(f"result {{i}}: got {{got.dtype}}{{list(got.shape)}}, expected {{want.dtype}}{{list(want.shape)}}")
                failed = True
            elif atol == 0 and rtol == 0:
                if not np.array_equal(got, want):
                    print(f"result {{i}}: {{int(np.sum(got != want))}} elements differ\\n got {{got}}\\n expected {{want}}")
                    failed = True
            elif not np.allclose(got.astype("float64"), want.astype("float64"), rtol=rtol, atol=atol):
                print(f"result {{i}}: outside rtol={{rtol}} atol={{atol}}\\n got {{got}}\\n expected {{want}}")
                failed = True
        if failed:
            print(f"(on run {{run}} of {{len(runs)}})")
            print("{mark} mismatch")
            return 1
    print("{mark} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''.format(mark=MARK)


# a gradient reproducer's comparison (dialects/*/repro.py): its outputs against EXPECTED_LOSS and
# EXPECTED (name, finite differences, the mask of smooth elements, rtol, atol per parameter)
GRADIENT_DIFFERS = '''def differs(outputs):
    """What differs of the gradient program's outputs (the loss, then each float parameter's
    gradient) from the reference's loss and finite differences, judged where smooth."""
    if len(outputs) != 1 + len(EXPECTED):
        return f"the gradient program returned {len(outputs)} tensors, expected {1 + len(EXPECTED)}"
    loss = float(outputs[0])
    if not np.isclose(loss, EXPECTED_LOSS, rtol=LOSS_RTOL, atol=LOSS_ATOL):
        return f"the loss is {loss!r}, the reference's {EXPECTED_LOSS!r}"
    for got, (name, want, smooth, rtol, atol) in zip(outputs[1:], EXPECTED):
        if got.shape != want.shape:
            return f"{name}'s gradient has shape {list(got.shape)}, its parameter {list(want.shape)}"
        judged = smooth & np.isfinite(got)
        wrong = judged & ~(np.abs(got - want) <= atol + rtol * np.abs(want))
        if wrong.any():
            index = tuple(int(i) for i in np.argwhere(wrong)[0])
            return (f"{name}'s gradient differs from finite differences at {int(wrong.sum())} of "
                    f"{int(judged.sum())} elements judged; first at {list(index)}: {got[index]!r}, "
                    f"finite differences {want[index]!r}")
    return None
'''


def gradient_expectation_lines(expected: dict | None) -> list[str]:
    """What a gradient reproducer compares with (GRADIENT_DIFFERS): the reference's loss and,
    per float parameter, the finite differences, the mask of smooth elements and tolerances;
    `EXPECTED = None` where the finding is a crash."""
    if expected is None:
        return [*RUNS_LINES, "EXPECTED = None"]
    rtol, atol = expected["loss_tolerance"]
    lines = [*RUNS_LINES, f"EXPECTED_LOSS = {expected['loss']!r}  # the NumPy reference's, in float64",
             f"LOSS_RTOL, LOSS_ATOL = {rtol!r}, {atol!r}",
             "# per float parameter: its name, the gradient central finite differences of the reference give,",
             "# where the loss is smooth around each element (only those are judged), rtol, atol",
             "EXPECTED = ["]
    lines += [f"    ({name!r}, {array_code(value)}, {array_code(smooth)}, {g_rtol!r}, {g_atol!r}),"
              for name, value, smooth, g_rtol, g_atol in expected["gradients"]]
    return lines + ["]"]

# the end of a gradient reproducer's main() (dialects/*/repro.py), once `runs` holds each run's
# loss and gradients: its verdict, `differs` comparing them with what the reference expects
GRADIENT_VERDICT = '''    except Exception as exc:
        print(f"{mark} stage={{stage}} error={{type(exc).__name__}}")
        raise
    if EXPECTED is None:
        print("{mark} ok")
        return 0
    for run, outputs in enumerate(runs, 1):
        said = differs(outputs)
        if said is not None:
            print(f"{{said}} (on run {{run}} of {{len(runs)}})")
            print("{mark} mismatch")
            return 1
    print("{mark} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''.format(mark=MARK)

# --- the short reproducer a maintainer reads (repro.py) -------------------------------------

# the stages a short reproducer stops at, so that it shows no inputs nor run lines
BEFORE_RUN = ("passes", "ill_formed_after_pass", "build")

_CONST_REF = re.compile(r"_c\[(\d+)\]")


def constant_code(a: np.ndarray) -> str:
    """A Relax constant as a script spells it (dialects/relax/text.py's `_c[k]`), its dtype
    spelt out: R.const would turn a float64 array into float32."""
    return f'R.const({array_code(a)}, "{a.dtype.name}")'


def inline_constants(text: str, consts: list[np.ndarray]) -> tuple[list[str], str]:
    """The module's text with each `_c[k]` (the worker's stand-in for a constant) spelt out
    where it is used once; a constant used at several places is one object in the module (a
    pass may fail on that alone), so it is defined once, as `c<k>`, by the lines returned
    first, and named at each place."""
    uses = Counter(int(k) for k in _CONST_REF.findall(text))
    shared = sorted(k for k, n in uses.items() if n > 1)
    definitions = [f"c{k} = {constant_code(consts[k])}  # one constant, used at {uses[k]} places" for k in shared]
    spelt = _CONST_REF.sub(lambda m: f"c{m.group(1)}" if uses[int(m.group(1))] > 1
                           else constant_code(consts[int(m.group(1))]), text)
    return definitions, spelt


def user_pass_imports(steps: list[dict]) -> list[str]:
    """`from module import factory` for each of the user's own passes, after the one line that
    puts their folder on the path (the only path a short reproducer holds: without it the
    script could not run alone)."""
    imports = [step["import"].split(":") for step in steps if step.get("import")]
    folders = sorted({step["search_dir"] for step in steps if step.get("import") and step.get("search_dir")})
    lines = ["import sys", *[f"sys.path.insert(0, {folder!r})  # your pass module's folder" for folder in folders]]
    return (lines if folders else []) + [f"from {module} import {factory}" for module, factory in sorted(set(map(tuple, imports)))]


def steps_to_show(finding: Finding, steps: list[dict]) -> list[dict]:
    """The pass sequence a short script runs: up to the pass blamed for an ill-formed module
    (the module is well-formed until it has run), or all of it."""
    blamed = finding.extra.get("blamed_pass")
    if blamed is None:
        return steps
    return steps[:next((i for i, step in enumerate(steps) if step["name"] == blamed), len(steps) - 1) + 1]


def pass_call(step: dict, namespace: str) -> str:
    """The pass of one step, as the script spells it."""
    args = ", ".join(f"{k}={v!r}" for k, v in step["args"].items())
    if step.get("import"):
        return f"{step['import'].split(':')[1]}({args})"
    return f"{namespace}.{step['name']}({args})"


def target_code(target) -> str:
    """A configuration's target as a script passes it to TVM: a kind as a string, a dict (a
    GPU and its architecture) as a Target, which relax.build requires of anything but a string."""
    return repr(target) if isinstance(target, str) else f"tvm.target.Target({target!r})"


def device_expression(config: dict) -> str:
    """The device a short reproducer runs on, as code."""
    return "tvm.cuda()" if target_kind(config["target"]) == "cuda" else "tvm.cpu()"


def input_lines(inputs: list[np.ndarray]) -> list[str]:
    if len(inputs) <= 1:
        return [f"inputs = [{', '.join(map(array_code, inputs))}]"]
    return ["inputs = [", *[f"    {array_code(a)}," for a in inputs], "]"]


_MISMATCH = re.compile(r"^result (\d+):", re.M)


def check_lines(finding: Finding, expected: list | None, outputs: str = "outputs", err_msg: str = "") -> list[str]:
    """The comparison of `outputs` (the variable of that name) with the reference's values:
    exact for integers and booleans, within the tolerance otherwise. Only the results the
    finding saw differ are checked (all comparable ones where it does not say), as a
    maintainer would write it. `err_msg`: code for what an assertion adds to its message."""
    differ = {int(i) for i in _MISMATCH.findall(finding.detail or "")}
    said = f", err_msg={err_msg}" if err_msg else ""
    lines = []
    for i, (value, rtol, atol) in enumerate(expected or []):
        if value is None or (differ and i not in differ):
            continue
        if rtol == 0 and atol == 0:
            lines.append(f"np.testing.assert_array_equal({outputs}[{i}], {array_code(value)}{said})")
        else:
            lines.append(f"np.testing.assert_allclose({outputs}[{i}], {array_code(value)}, rtol={rtol!r}, "
                         f"atol={atol!r}{said})")
    return lines


def repeated_check_lines(finding: Finding, expected: list | None, run_lines: list[str]) -> list[str]:
    """A short script's run (`run_lines`, leaving `outputs`) and its checks, REPEAT_RUNS times,
    each assertion saying its run: as the harness does, so that a wrong result that shows
    only from the second run on fails here too. Nothing where no result is compared."""
    checks = check_lines(finding, expected, err_msg='f"on run {k} of ' + f'{REPEAT_RUNS}"')
    if not checks:
        return []
    # k, not run: Relay's scripts call their compiled function `run`
    return [f"for k in range(1, {REPEAT_RUNS + 1}):  # some wrong results show only on a later run",
            *[f"    {line}" for line in [*run_lines, *checks]]]


def flatten_lines(tensor_class: str) -> list[str]:
    """`flatten`: a function's results, however nested in tuples, as NumPy arrays."""
    return ["def flatten(v):",
            f"    return [v.numpy()] if isinstance(v, {tensor_class}) else [a for x in v for a in flatten(x)]", ""]


# --- a disruptive finding's short reproducer: the violating call alone ----------------------

@dataclass
class CallInput:
    """One tensor the violating call reads, as a parameter of the short script's function."""
    index: int                # 0, 1, ... in the order the call first reads them
    shape: list[int]          # as declared (a lied parameter: the shape match_cast claims)
    dtype: str
    value: np.ndarray         # what the case passed it (a lied one: its real shape)
    lied: bool = False        # Relax declares it by rank alone and match_casts it


@dataclass
class ViolatingCall:
    """The one invalid call of a disruptive case, without the valid graph around it: what a
    dialect's `render_violation_short` spells as TVM code (plain data, no TVM)."""
    op: str                   # the dialect's op name, as the violation plan names it
    args: list[str]           # each argument as source text, "{p}" before an input's index
    #                           ("{p}0", "[{p}0, {p}1]", "2"): its parameter's name prefix
    kwargs: dict
    arity: int                # -1 drops the last argument, +1 repeats the first
    wrap: str | None          # None (in main), "global" or "local": where the worker put it
    inputs: list[CallInput]
    what: str                 # "dtype-mismatch on less_equal (input 1 is float64, ...)"
    tuple_result: bool = False  # the op returns several tensors (Relay wraps them: astuple)


def violating_call(disruption: dict, graph, specs, inputs: list[np.ndarray], result_values: list) -> ViolatingCall:
    """The violating call of a disruptive case, its inputs made parameters. A parameter
    of the valid graph keeps the value the case passed; a result of the valid graph gets
    the value NumPy's reference computed for it (`result_values`, one per result)."""
    plan, violation = disruption["plan"], disruption["violation"]
    variables, results = graph.variables, graph.results()
    lied = plan["lie"]["param"] if plan.get("lie") else None
    found: dict[tuple, CallInput] = {}

    def read(where: list) -> str:
        key = tuple(where)
        if key not in found:
            if where[0] == "param":
                node = variables[where[1]]
                found[key] = CallInput(len(found), list(node.type.shape), node.type.dtype, inputs[where[1]],
                                       lied=where[1] == lied)
            else:
                t = graph.type_of(results[where[1]])
                found[key] = CallInput(len(found), list(t.shape), t.dtype,
                                       np.asarray(result_values[where[1]], dtype=t.dtype).reshape(t.shape))
        return f"{{p}}{found[key].index}"

    def text(arg) -> str:
        if isinstance(arg, dict):
            if "list" in arg:
                return f"[{', '.join(text(a) for a in arg['list'])}]"
            return repr(arg["value"]).replace("{", "{{").replace("}", "}}")
        return read(arg)
    args = [text(a) for a in plan["args"]]
    what = f"{violation['kind']} on {violation['op']} ({violation['detail']})"
    spec = specs.ops.get(violation["op"])
    return ViolatingCall(plan["op"], args, dict(plan["kwargs"]), plan["arity"], plan.get("wrap"),
                         list(found.values()), what, tuple_result=bool(spec and spec.multi_output))


def call_text(call: ViolatingCall, namespace: str, prefix: str) -> str:
    """`relax.op.add(x0, x1, axis=1)`: the call as the dialect's Python API spells it, its
    inputs the parameters named `prefix` and their index."""
    kwargs = [f"{k}={v!r}" for k, v in call.kwargs.items()]
    return f"{namespace}.{call.op}({', '.join([a.format(p=prefix) for a in call.args] + kwargs)})"


def arity_line(call: ViolatingCall, call_class: str, type_args: str) -> list[str]:
    """Rebuild `call` with one argument too few or too many (the op's Python API would not)."""
    if not call.arity:
        return []
    args = "list(call.args)[:-1]" if call.arity < 0 else "[*call.args, call.args[0]]"
    return [f"call = {call_class}(call.op, {args}, call.attrs, call.{type_args})"]


def expectation_comment(finding: Finding, call: ViolatingCall) -> str:
    """The one comment line saying what TVM should do with the call, and what it does."""
    if finding.kind == "silent-acceptance":
        return f"# {call.what}: TVM accepts it; a fix rejects it with an error naming the problem"
    if finding.kind == "poor-diagnostic":
        return (f"# {call.what}: TVM fails with {finding.extra.get('exc_type')}, an internal error; "
                "expected a diagnostic naming the problem")
    if finding.kind == "hang":
        return f"# {call.what}: TVM does not finish with it; expected a diagnostic naming the problem"
    return f"# {call.what}: TVM crashes; expected a diagnostic naming the problem"


def rejection_check(body: list[str], call: ViolatingCall, kind: str) -> list[str]:
    """A silent acceptance's check: the program must be rejected with a diagnostic; the
    script raises while TVM accepts it, and passes once TVM raises a user-facing error (as
    core/violations.py classify calls a clean rejection; a lied match_cast, caught at run
    time, must name match_cast). An internal error is no fix: it is raised as it is."""
    from ..core.violations import CLEAN_ERRORS
    diagnostic = f"type(exc).__name__ in {CLEAN_ERRORS!r} and 'InternalError' not in str(exc)[:200]"
    if kind == "match-cast-lie":
        diagnostic += " and 'match_cast' in str(exc)"
    return (["try:", *[f"    {ln}" for ln in body],
             "except Exception as exc:",
             f"    if not ({diagnostic}):",
             "        raise  # TVM failed, but with no diagnostic naming the problem: not a fix",
             "    print('rejected:', type(exc).__name__)  # fixed: TVM rejects the invalid call",
             "else:",
             f"    raise AssertionError({('TVM accepted ' + call.what)!r})"])


def with_small_inputs(call: ViolatingCall) -> ViolatingCall:
    """The call with each input a constant tensor of its own smallest value: a silent
    acceptance does not depend on the values, each inside its domain (an interval) as the
    case's were, and its script holds no multi-kilobyte literals (array_code: np.full)."""
    inputs = [replace(i, value=np.full(i.value.shape, i.value.min() if i.value.size else 0, dtype=i.value.dtype))
              for i in call.inputs]
    return replace(call, inputs=inputs)


class Reach(IntEnum):
    """How far a short script goes: as far as the stage where the finding was seen."""
    CONSTRUCT = 0     # the module is made (TVM infers the call's type as it is added)
    WELL_FORMED = 1   # and checked
    BUILD = 2         # and built
    RUN = 3           # and run on the case's inputs

    @classmethod
    def of(cls, finding: Finding) -> "Reach":
        # "worker": the process died building or running it, so the script does both
        return {"lower": cls.CONSTRUCT, "well_formed": cls.WELL_FORMED, "build": cls.BUILD}.get(finding.stage, cls.RUN)


def finish_short(finding: Finding, call: ViolatingCall, imports: list[str], body: list[str]) -> str:
    """The script: imports, the comment on what TVM should do, and the body, which a silent
    acceptance's check wraps (it must fail while TVM accepts the program)."""
    if finding.kind == "silent-acceptance":
        body = rejection_check(body, call, finding.extra.get("violation", {}).get("kind", ""))
    return "\n".join([*imports, "", expectation_comment(finding, call), *body]) + "\n"
