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

from ...core.finding import Finding
from ...core.graph import Graph, Ref
from ...protocol import REPRO_MARK as MARK
from ..reproducer import (BEFORE_RUN, CHECK_RESULTS, USER_PASS, array_code, check_lines, data_lines, docstring,
                          flatten_lines, inline_constants, input_lines, pass_call, source_of, steps_to_show, user_pass_imports)

HERE = Path(__file__).parent

class _Code:
    """A Python expression in the reproducer; its repr is the text, so lists of them print."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return self.text


def _literal(value) -> str:
    return repr(value)


def render_module_code(graph: Graph, specs) -> str:
    """Python that rebuilds the lowered module with BlockBuilder calls (tvm + numpy only)."""
    names: dict[Ref, str] = {}
    lines = ["def build_module():", "    bb = relax.BlockBuilder()"]
    params = []
    for n in graph.variables:
        name = f"x{n.id}"
        names[Ref(n.id)] = name
        params.append(name)
        lines.append(f"    {name} = relax.Var({name!r}, relax.TensorType({list(n.type.shape)!r}, {n.type.dtype!r}))")
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
    results = [names[r] for r in graph.results()]
    out = results[0] if len(results) == 1 else f"relax.Tuple([{', '.join(results)}])"
    lines.append(f"            gv = bb.emit_output({out})")
    lines.append("        bb.emit_func_output(gv)")
    lines.append("    return bb.get()")
    return "\n".join(lines)


_REPRO_MAIN = '''

def flatten(value):
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]


def check_well_formed_after(pass_, mod):
    """The first pass whose output is not well-formed is the one to blame."""
    try:
        relax.analysis.well_formed(mod)
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
        with tvm.transform.PassContext(opt_level=OPT_LEVEL):
            for pass_ in pass_list:  # one at a time, each output checked, as hirfuzz does
                stage = "passes"
                mod = tvm.transform.Sequential([pass_])(mod)
                stage = "ill_formed_after_pass"
                check_well_formed_after(pass_, mod)
            stage = "build"
            mod = prepare_for_build(mod)
            executable = relax.build(mod, target=TARGET, relax_pipeline=PIPELINE, exec_mode=EXEC_MODE)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        dev = tvm.cuda(0) if TARGET.startswith("cuda") else tvm.cpu(0)
        vm = relax.VirtualMachine(executable, dev)
        outputs = flatten(vm["main"](*[tvm.runtime.tensor(a, dev) for a in INPUTS]))
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
        f"TARGET = {config['target']!r}",
        f"OPT_LEVEL = {config['opt_level']!r}",
        f"PIPELINE = {config['pipeline']!r}",
        f"EXEC_MODE = {config['exec_mode']!r}",
        f"RUN = {run!r}",
        "",
    ]
    # the worker's own precondition step, copied verbatim (read as text: the mutators import
    # TVM, which the coordinator never does)
    ir = HERE / "mutators" / "ir.py"
    header += ["", source_of(ir, "prepare_for_build"), "", source_of(ir, "_has_local_functions")]
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
                *[f"    {array_code(c)}," for c in module_script["consts"]], "]", "",
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


# --- the short reproducer a maintainer reads ---------------------------------------------------

_LOCAL_FUNCTION = re.compile(r"^ {8,}@R\.function", re.M)


def _script_text(module_script: dict) -> str:
    """The module's TVMScript, constants inline, without the printer's import comments."""
    text = inline_constants(module_script["script"], module_script["consts"])
    # the printer repeats its import comments above each local function
    return "\n".join(ln.rstrip() for ln in text.strip().splitlines()
                     if not ln.lstrip().startswith("# from tvm.")).strip()


def _pass_lines(config: dict) -> list[str]:
    steps = config.get("passes", [])
    lines = []
    if steps:
        # one Sequential, as hirfuzz runs them: it skips a pass above the context's opt_level
        passes = ", ".join(pass_call(step, "relax.transform") for step in steps)
        lines.append(f"    mod = tvm.transform.Sequential([{passes}])(mod)")
    return lines


def _build_line(config: dict) -> str:
    options = [f"target={config['target']!r}"]
    if config["pipeline"] != "default":
        options.append(f"relax_pipeline={config['pipeline']!r}")
    if config["exec_mode"] != "bytecode":
        options.append(f"exec_mode={config['exec_mode']!r}")
    return f"    ex = relax.build(mod, {', '.join(options)})"


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
    checks = check_lines(finding, expected) if run else []
    if checks:
        lines += flatten_lines("tvm.runtime.Tensor")
    lines += [text, ""]
    blamed = finding.extra.get("blamed_pass")
    steps = steps_to_show(finding, config.get("passes", []))
    lines += ["mod = Module", f"with tvm.transform.PassContext(opt_level={config['opt_level']}):"]
    lines += _pass_lines({**config, "passes": steps})
    if blamed is not None:
        lines += ["    relax.analysis.well_formed(mod)  # raises: the pass left an ill-formed module"]
        return "\n".join(lines) + "\n"
    if _LOCAL_FUNCTION.search(text):  # TVM requires LambdaLift before building local functions
        lines.append("    mod = relax.transform.LambdaLift()(mod)")
    lines.append(_build_line(config))
    if not run:
        return "\n".join(lines) + "\n"
    dev = "tvm.cuda()" if config["target"].startswith("cuda") else "tvm.cpu()"
    lines += input_lines(inputs)
    lines += [f"vm = relax.VirtualMachine(ex, {dev})",
              f"result = vm['main'](*[tvm.runtime.tensor(a, {dev}) for a in inputs])"]
    if checks:
        lines += ["outputs = flatten(result)", *checks]
    return "\n".join(lines) + "\n"
