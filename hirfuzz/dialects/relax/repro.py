"""Standalone reproducers for Relax findings: a script that needs only tvm and numpy.

The script rebuilds the module (with BlockBuilder calls, so it works even when TVM crashes
while printing, or from the TVMScript the worker printed for modules with functions and
features), prints it, runs the pass sequence, builds and runs it, and exits 1 while the
bug is there. Its marks (`protocol.REPRO_MARK`) tell the checker how far it got. Writing
it imports no TVM: it runs in the coordinator.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np

from ...core.finding import RETURNS_CHANGED, Finding
from ...core.graph import Graph, Ref
from ...core.targets import target_label
from ...core.gradients import float_results
from ...protocol import CHECK_ONLY, GRADIENT, REPRO_MARK as MARK
from ..base import ReproducerWriter
from . import TARGET_DEFAULT_PIPELINE
from ..reproducer import (BEFORE_RUN, CHECK_RESULTS, GRADIENT_DIFFERS, GRADIENT_VERDICT, USER_PASS,
                          gradient_expectation_lines,
                          CallInput, Reach, ViolatingCall, array_code, arity_line,
                          device_expression, target_code,
                          call_text, check_lines, repeated_check_lines, data_lines, docstring, finish_short, flatten_lines,
                          constant_code, inline_constants, input_lines, pass_call, source_of, steps_to_show, user_pass_imports)

HERE = Path(__file__).parent

class _Code:
    """A Python expression in the reproducer; its repr is the text, so lists of them print."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return self.text


def _literal(value) -> str:
    return repr(value)


def render_module_code(graph: Graph, specs, loss_dtype: str | None = None) -> str:
    """Python that rebuilds the lowered module with BlockBuilder calls (tvm + numpy only);
    with `loss_dtype`, main returns its float results summed to one scalar of that dtype, as
    lower.lower_loss lowers a gradient configuration's program."""
    names: dict[Ref, str] = {}
    lines = ["def build_module():",
             "    # 0.27 renamed TensorStructInfo to TensorType; before, relax.TensorType was another class",
             '    tensor_type = getattr(relax, "TensorStructInfo", None) or relax.TensorType',
             "    bb = relax.BlockBuilder()"]
    params = []
    for n in graph.variables:
        name = f"x{n.id}"
        names[Ref(n.id)] = name
        params.append(name)
        lines.append(f"    {name} = relax.Var({name!r}, tensor_type({list(n.type.shape)!r}, {n.type.dtype!r}))")
    lines.append(f"    with bb.function('main', [{', '.join(params)}]):")
    lines.append("        with bb.dataflow():")
    for node in graph.nodes:
        if node.kind == "const":
            name = f"c{node.id}"
            names[Ref(node.id)] = name
            arr = np.asarray(node.value, dtype=node.type.dtype)
            lines.append(f"            {name} = relax.const({array_code(arr)}, {node.type.dtype!r})")
        if node.kind != "op":
            continue
        spec = specs.ops[node.op]
        env = {ispec.name: ([_Code(names[r]) for r in item] if isinstance(item, list) else _Code(names[item]))
               for ispec, item in zip(spec.inputs, node.inputs)}
        args, kwargs = spec.call_arguments(node.attrs, node.dtype, env)
        call_text = ", ".join([repr(a) for a in args] + [f"{k}={_literal(v)}" for k, v in kwargs.items()])
        name = f"lv{node.id}"
        lines.append(f"            {name} = bb.emit(relax.op.{spec.dialect_op}({call_text}))")
        if spec.multi_output:
            for i in range(len(node.outputs)):
                names[Ref(node.id, i)] = f"{name}_{i}"
                lines.append(f"            {name}_{i} = bb.emit(relax.TupleGetItem({name}, {i}))")
        else:
            names[Ref(node.id)] = name
    if loss_dtype is not None:
        lines += _loss_lines(graph, names, loss_dtype)
        out = "loss"
    else:
        results = [names[r] for r in graph.results()]
        out = results[0] if len(results) == 1 else f"relax.Tuple([{', '.join(results)}])"
    lines.append(f"            gv = bb.emit_output({out})")
    lines.append("        bb.emit_func_output(gv)")
    lines.append("    return bb.get()")
    return "\n".join(lines)


def _loss_lines(graph: Graph, names: dict, loss_dtype: str) -> list[str]:
    """`loss`: each float result summed, cast to `loss_dtype`, added (lower.lower_loss)."""
    lines = []
    for i, ref in enumerate(float_results(graph)):
        lines.append(f"            term = bb.emit(relax.op.sum({names[ref]}))")
        if graph.type_of(ref).dtype != loss_dtype:
            lines.append(f"            term = bb.emit(relax.op.astype(term, {loss_dtype!r}))")
        lines.append("            loss = term" if i == 0 else "            loss = bb.emit(relax.op.add(loss, term))")
    return lines


_REPRO_MAIN = '''

def flatten(value):
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]


def check_well_formed_after(pass_, mod, returned):
    """The first pass whose output is not well-formed, or whose public functions return a
    type contradicting what they returned (`returned`), is the one to blame."""
    try:
        relax.analysis.well_formed(mod)
        check_returns_kept(returned, mod)
    except Exception as exc:
        print(f"well_formed before {{pass_.info.name}}: True")
        print(f"well_formed after {{pass_.info.name}}: False: {{str(exc).strip().splitlines()[0]}}")
        raise


def main():
    stage = "setup"  # what the script needs besides TVM (a user's pass module): not the bug
    try:
        pass_list = passes()
        stage = "lower"
        mod = build_module()
        print(mod.script())
        stage = "well_formed"
        relax.analysis.well_formed(mod)
        returned = returned_types(mod)
        with tvm.transform.PassContext(opt_level=OPT_LEVEL):
            for pass_ in pass_list:  # one at a time, each output checked, as hirfuzz does
                stage = "passes"
                mod = tvm.transform.Sequential([pass_])(mod)
                stage = "ill_formed_after_pass"
                check_well_formed_after(pass_, mod, returned)
            stage = "build"
            mod = prepare_for_build(mod)
            executable = relax.build(mod, target=TARGET, relax_pipeline=PIPELINE, exec_mode=EXEC_MODE)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        dev = tvm.cuda(0) if tvm.target.Target(TARGET).kind.name == "cuda" else tvm.cpu(0)
        vm = relax.VirtualMachine(executable, dev)
        runs = [flatten(vm["main"](*[tvm.runtime.tensor(a, dev) for a in INPUTS])) for _ in range(RUNS)]
    except Exception as exc:
        print(f"{mark} stage={{stage}} error={{type(exc).__name__}}")
        raise
'''.format(mark=MARK) + CHECK_RESULTS


def _pass_code(step: dict) -> str:
    if step.get("import"):
        return f"user_pass({step['import']!r}, {step.get('search_dir')!r}, {step['args']!r})"
    args = ", ".join(f"{k}={v!r}" for k, v in step["args"].items())
    return f"relax.transform.{step['name']}({args})"


def render_reproducer(graph: Graph, specs, finding: Finding, config: dict, inputs: list[np.ndarray],
                      run: bool, expected: list | None, tvm_version: str | None,
                      violation_plan: dict | None = None, module_script: dict | None = None) -> str:
    """A standalone script: exits 1 (exception, mismatch) or dies while the bug is present.

    With a violation plan (disruptive mode) the script adds the violating call with the
    very function the worker used, and a program that builds and runs is the bug.
    """
    header = [
        *docstring(finding, config, tvm_version, "apache-tvm 0.27 (Relax)"),
        "import sys",
        "",
        "import numpy as np",
        "import tvm",
        "from tvm import relax",
        "",
        f"TARGET = {target_code(config['target'])}",
        f"OPT_LEVEL = {config['opt_level']!r}",
        f"PIPELINE = {_pipeline_code(config, 'tvm.target.Target(TARGET)')}",
        f"EXEC_MODE = {config['exec_mode']!r}",
        f"RUN = {run!r}",
        "",
    ]
    # the worker's own precondition step, copied verbatim (read as text: the mutators import
    # TVM, which the coordinator never does)
    ir = HERE / "mutators" / "ir.py"
    header += ["", source_of(ir, "prepare_for_build"), "", source_of(ir, "_has_local_functions")]
    # and its check of what a pass's output returns (returns.py), so that check.py blames as it does
    returns = HERE / "returns.py"
    header += ["", f"RETURNS_CHANGED = {RETURNS_CHANGED!r}", "",
               *(source_of(returns, name) + "\n\n" for name in ("returned_types", "what_changed", "check_returns_kept"))]
    passes = [_pass_code(step) for step in config.get("passes", [])]
    if any(step.get("import") for step in config.get("passes", [])):
        header.append(USER_PASS)
    header += ["", "def passes():", f"    return [{', '.join(passes)}]", ""]
    if module_script is None:
        body = [render_module_code(graph, specs), ""]
    elif "error" in module_script:
        # no faithful TVMScript: say so; the reproducer check will then keep it unconfirmed
        body = ["def build_module():",
                f"    raise RuntimeError({('hirfuzz could not print this module: ' + module_script['error'])!r})", ""]
    else:
        body = ["from tvm.script import ir as I, relax as R, tirx as T  # noqa: E402,E741", "",
                "def TypeVar(name):  # how the printer spells a global function's symbolic dimension",
                "    return tvm.tirx.Var(name, 'int64')", "",
                "_c = [  # the module's tensor constants",
                *[f"    {constant_code(c)}," for c in module_script["consts"]], "]", "",
                module_script["script"].strip(), "", "",
                "def build_module():", "    return Module", ""]
    if violation_plan is not None:
        from .violate import apply_violation
        body[0] = body[0].replace("def build_module():", "def build_valid_module():", 1)
        body += [inspect.getsource(apply_violation), "",
                 f"VIOLATION = {violation_plan!r}", "",
                 "def build_module():",
                 "    return apply_violation(build_valid_module(), VIOLATION)", ""]
    body += data_lines(inputs, expected, rejection=violation_plan is not None)
    return "\n".join(header + body) + _REPRO_MAIN


# --- a gradient finding's reproducer (the gradient oracle: campaign/oracles/gradient.py) --------

_GRADIENT_MAIN = '''

def flatten(value):
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]


{differs}

def main():
    stage = "lower"
    try:
        mod = build_module()
        print(mod.script())
        stage = "well_formed"
        relax.analysis.well_formed(mod)
        stage = "passes"
        params = mod["main"].params
        mod = relax.transform.Gradient("main", require_grads=[params[i] for i in FLOAT_PARAMS])(mod)
        stage = "ill_formed_after_pass"
        relax.analysis.well_formed(mod)
        stage = "build"
        with tvm.transform.PassContext(opt_level=OPT_LEVEL):
            executable = relax.build(mod, target=TARGET, relax_pipeline=PIPELINE, exec_mode=EXEC_MODE)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        vm = relax.VirtualMachine(executable, tvm.cpu(0))
        runs = [flatten(vm["main_adjoint"](*[tvm.runtime.tensor(a) for a in INPUTS])) for _ in range(RUNS)]
'''.format(mark=MARK, differs=GRADIENT_DIFFERS) + GRADIENT_VERDICT


def render_gradient(graph: Graph, specs, finding: Finding, config: dict, inputs: list[np.ndarray], run: bool,
                    expected: dict | None, tvm_version: str | None, module_script: dict | None = None) -> str:
    """repro.py of a gradient finding: the loss program (main's float results summed),
    relax.transform.Gradient with respect to its float parameters, built and main_adjoint
    run; for a wrong result, the loss and each gradient checked against the reference's
    and the finite differences `expected` holds ({"loss", "loss_tolerance": (rtol, atol),
    "gradients": [(name, value, smooth mask, rtol, atol)]}), judged where smooth."""
    from ...core.gradients import differentiated_positions
    from .gradients import DECLARED_NO_GRAD
    header = [
        *docstring(finding, config, tvm_version, "apache-tvm 0.27 (Relax)"),
        "import sys", "", "import numpy as np", "import tvm", "from tvm import relax", "",
        f"TARGET = {target_code(config['target'])}",
        f"OPT_LEVEL = {config['opt_level']!r}",
        f"PIPELINE = {_pipeline_code(config, 'tvm.target.Target(TARGET)')}",
        f"EXEC_MODE = {config['exec_mode']!r}",
        f"RUN = {run!r}",
        "# the parameters whose gradients are asked for: the float ones reaching no input TVM",
        "# declares without a gradient (full_like's fill value, nll_loss's weights)",
        f"FLOAT_PARAMS = {differentiated_positions(graph, DECLARED_NO_GRAD)!r}",
        "", "",
        render_module_code(graph, specs, loss_dtype=config[GRADIENT]), "",
        "INPUTS = [", *[f"    {array_code(a)}," for a in inputs], "]",
    ]
    header += gradient_expectation_lines(expected)
    return "\n".join(header) + _GRADIENT_MAIN


# --- the short reproducer a maintainer reads ---------------------------------------------------

_LOCAL_FUNCTION = re.compile(r"^ {8,}@R\.function", re.M)


def _script_text(module_script: dict) -> str:
    """The module's TVMScript, constants inline (a shared one defined above it), without the
    printer's import comments (the script imports what it uses, and defines its own TypeVar)."""
    definitions, text = inline_constants(module_script["script"], module_script["consts"])
    # the printer repeats its import comments above each local function
    text = "\n".join(ln.rstrip() for ln in text.strip().splitlines()
                     if not ln.lstrip().startswith(("# from tvm.", "# from typing import"))).strip()
    return "\n".join([*definitions, "", text] if definitions else [text])


def _pass_lines(config: dict) -> list[str]:
    steps = config.get("passes", [])
    lines = []
    if steps:
        # one Sequential, as hirfuzz runs them: it skips a pass above the context's opt_level
        passes = ", ".join(pass_call(step, "relax.transform") for step in steps)
        lines.append(f"    mod = tvm.transform.Sequential([{passes}])(mod)")
    return lines


def _pipeline_code(config: dict, target: str) -> str:
    """The configuration's pipeline as the script passes it to relax.build; `target` is the
    code of the tvm.target.Target it builds for."""
    if config["pipeline"] == TARGET_DEFAULT_PIPELINE:  # what executors.relax_pipeline resolves it to
        return f"relax.get_default_pipeline({target})"
    return repr(config["pipeline"])


def _build_line(config: dict, name: str = "ex") -> str:
    options = [f"target={target_code(config['target'])}"]
    if config["pipeline"] != "default":
        target_object = f"tvm.target.Target({config['target']!r})"
        options.append(f"relax_pipeline={_pipeline_code(config, target_object)}")
    if config["exec_mode"] != "bytecode":
        options.append(f"exec_mode={config['exec_mode']!r}")
    return f"    {name} = relax.build(mod, {', '.join(options)})"


def _returns_check_lines(pass_name: str) -> list[str]:
    """repro.py's check of a pass that changed what main returns (returns.py, in plain words):
    the type main returned as written, against the one it returns after the passes."""
    return ["returned, now = Module[\"main\"].ret_ty, mod[\"main\"].ret_ty",
            "print(\"main returned\", returned, \"and now returns\", now)",
            "# FAIL_L0: the two contradict each other, whatever the symbolic shapes",
            "if relax.analysis.type_base_check(returned, now) == relax.analysis.BaseCheckResult.FAIL_L0:",
            f"    raise ValueError(f\"{pass_name} changed the type main returns: {{returned}} became {{now}}\")"]


def render_short(finding: Finding, config: dict, inputs: list[np.ndarray], run: bool, expected: list | None,
                 module_script: dict) -> str:
    """repro.py: the module as TVMScript, its inputs, the pass, build and run lines, and the
    check; it raises (an exception, or an AssertionError for a wrong result) while the bug is
    there. Nothing of hirfuzz's is in it."""
    run = run and finding.stage not in BEFORE_RUN  # it fails before running: no inputs to show
    text = _script_text(module_script)
    tirx = "T." in text
    lines = ["import numpy as np", "import tvm", "from tvm import relax",
             f"from tvm.script import ir as I, relax as R{', tirx as T' if tirx else ''}",
             *user_pass_imports(config.get("passes", [])), ""]
    if "TypeVar(" in text:  # how the printer spells a global function's symbolic dimension
        lines += ["def TypeVar(name):", "    return tvm.tirx.Var(name, 'int64')", ""]
    if run and check_lines(finding, expected):  # a result is compared: flatten the outputs
        lines += flatten_lines("tvm.runtime.Tensor")
    lines += [text, ""]
    blamed = finding.extra.get("blamed_pass")
    steps = steps_to_show(finding, config.get("passes", []))
    lines += ["mod = Module", f"with tvm.transform.PassContext(opt_level={config['opt_level']}):"]
    lines += _pass_lines({**config, "passes": steps})
    if blamed is not None and RETURNS_CHANGED in finding.message:
        return "\n".join(lines + _returns_check_lines(steps[-1]["name"])) + "\n"
    if blamed is not None:
        lines += ["    relax.analysis.well_formed(mod)  # raises: the pass left an ill-formed module"]
        return "\n".join(lines) + "\n"
    if config.get(CHECK_ONLY):  # a check-only sequence's failure: its passes raise, nothing was built
        return "\n".join(lines) + "\n"
    if _LOCAL_FUNCTION.search(text):  # TVM requires LambdaLift before building local functions
        lines.append("    mod = relax.transform.LambdaLift()(mod)")
    lines.append(_build_line(config))
    if not run:
        return "\n".join(lines) + "\n"
    dev = device_expression(config)
    lines += input_lines(inputs)
    lines.append(f"vm = relax.VirtualMachine(ex, {dev})")
    result = f"vm['main'](*[tvm.runtime.tensor(a, {dev}) for a in inputs])"
    checked = repeated_check_lines(finding, expected, [f"outputs = flatten({result})"])
    if not checked:
        return "\n".join(lines + [f"result = {result}"]) + "\n"
    return "\n".join(lines + _baseline_lines(finding, expected) + checked) + "\n"


def _baseline_lines(finding: Finding, expected: list | None) -> list[str]:
    """A finding of one target alone (the target oracle's) runs the same module on the
    baseline's target too, which agrees with the reference, before the target that does not."""
    baseline = finding.extra.get("baseline_config")
    if baseline is None:
        return []
    dev = device_expression(baseline)
    return [f"with tvm.transform.PassContext(opt_level={baseline['opt_level']}):",
            _build_line(baseline, name="ex_baseline"),
            f"baseline = flatten(relax.VirtualMachine(ex_baseline, {dev})['main']"
            f"(*[tvm.runtime.tensor(a, {dev}) for a in inputs]))",
            f"# on {target_label(baseline['target'])}, the results agree with the reference:",
            *check_lines(finding, expected, outputs="baseline")]


# --- a disruptive finding's short reproducer: the violating call alone --------------------------

def _tensor_type(i: CallInput) -> str:
    return f"relax.TensorType({i.shape!r}, {i.dtype!r})"


def _params(call: ViolatingCall, prefix: str) -> tuple[list[str], list[str], list[str]]:
    """A function's parameters for the call's inputs: their declarations, their names, and
    the match_cast a lied one needs inside the function (it is declared by rank alone, and
    named as the worker names it, so that TVM's messages read alike)."""
    declared, names, casts = [], [], []
    for i in call.inputs:
        name = f"{prefix}{i.index}"
        if i.lied:
            declared.append(f"lied = relax.Var('lied', relax.TensorType(ndim={len(i.shape)}, dtype={i.dtype!r}))")
            names.append("lied")
            casts.append(f"    {name} = bb.match_cast(lied, {_tensor_type(i)})")
        else:
            declared.append(f"{name} = relax.Var({name!r}, {_tensor_type(i)})")
            names.append(name)
    return declared, names, casts


def _call_lines(call: ViolatingCall, builder: str, prefix: str) -> list[str]:
    """The violating call, emitted into `builder`'s current function as its result."""
    return [f"    call = {call_text(call, 'relax.op', prefix)}",
            *[f"    {ln}" for ln in arity_line(call, "relax.Call", "ty_args")],
            f"    {builder}.emit_func_output({builder}.emit(call))"]


def _violation_module_lines(call: ViolatingCall, wrapped: bool) -> list[str]:
    """BlockBuilder code making `mod`: main holds the call, or calls the private function
    (wrap "global") or closure (wrap "local") that holds it, as the worker built it; main's
    parameters are x0, x1, ..., the function's a0, a1, ..."""
    declared, names, casts = _params(call, "x")
    main = f"with bb.function('main', [{', '.join(names)}]):"
    if not wrapped or call.wrap is None:
        return ["bb = relax.BlockBuilder()", *declared, main, *casts, *_call_lines(call, "bb", "x"), "mod = bb.get()"]
    inner = [f"a{i.index} = relax.Var('a{i.index}', {_tensor_type(i)})" for i in call.inputs]
    add = "bb.add_func(inner.get()['bad'], 'bad')" if call.wrap == "global" else "bb.emit(inner.get()['bad'], 'bad')"
    return ["inner = relax.BlockBuilder()", *inner,
            f"with inner.function('bad', [{', '.join(f'a{i.index}' for i in call.inputs)}], private=True):",
            *_call_lines(call, "inner", "a"),
            "bb = relax.BlockBuilder()", *declared, main, *casts, f"    bad = {add}",
            f"    bb.emit_func_output(bb.emit(relax.Call(bad, [{', '.join(f'x{i.index}' for i in call.inputs)}])))",
            "mod = bb.get()"]


def render_violation_short(finding: Finding, config: dict, call: ViolatingCall, wrapped: bool) -> str:
    """repro.py for a disruptive finding: the violating call alone, its inputs the function's
    parameters (in a private function or closure too where `wrapped`), then as much as the
    finding's stage needs: the well-formedness check, the build, the run on the case's
    values. A poor diagnostic or a crash fails as TVM fails; a silent acceptance raises while
    TVM accepts the program. Nothing of hirfuzz's is in it."""
    reach = Reach.of(finding)
    body = _violation_module_lines(call, wrapped)
    if reach == Reach.WELL_FORMED or finding.kind == "silent-acceptance":  # a fix may reject it here
        body.append("relax.analysis.well_formed(mod)")
    if reach >= Reach.BUILD:
        body.append(f"with tvm.transform.PassContext(opt_level={config['opt_level']}):")
        if wrapped and call.wrap == "local":  # TVM requires LambdaLift before building closures
            body.append("    mod = relax.transform.LambdaLift()(mod)")
        body.append(_build_line(config))
    if reach >= Reach.RUN:
        dev = device_expression(config)
        body += [*input_lines([i.value for i in call.inputs]), f"vm = relax.VirtualMachine(ex, {dev})",
                 f"vm['main'](*[tvm.runtime.tensor(a, {dev}) for a in inputs])"]
    imports = [*(["import numpy as np"] if reach >= Reach.RUN else []), "import tvm", "from tvm import relax"]
    return finish_short(finding, call, imports, body)


class RelaxReproducerWriter(ReproducerWriter):
    render_reproducer = staticmethod(render_reproducer)
    render_short = staticmethod(render_short)
    render_violation_short = staticmethod(render_violation_short)
    render_gradient = staticmethod(render_gradient)


WRITER = RelaxReproducerWriter()
